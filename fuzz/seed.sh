#!/usr/bin/env bash
# Seeds fuzz/corpus/TARGET/ from ../shared/fixtures (never committed: the
# corpora grow while fuzzing). Large files are cut to their first 64 KiB, the
# inputs' maximum length in the long runs (docs/testing.md).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
fixtures=${FIXTURES:-$here/../../shared/fixtures}
corpus=$here/corpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

put() { # put TARGET FILE [NAME]
    mkdir -p "$corpus/$1"
    head -c 65536 "$2" > "$corpus/$1/${3:-$(basename "$2")}"
}

archives=$(find "$fixtures" -type f \( -name '*.warc*' -o -name '*.arc*' -o -name '*.dat' \) | sort)
# zstd and a zstd frame with a dictionary id are not among the fixtures.
zstd -q -c "$fixtures/warcio/example.warc" > "$tmp/example.warc.zst"
gzip -c "$fixtures/warcio/example.warc" > "$tmp/example.warc.whole.gz"
# Web InfoMall records from the middle of page.dat too.
dd if="$fixtures/tianwang/page.dat" of="$tmp/page-middle.dat" iflag=skip_bytes,count_bytes skip=1000000 count=65536 status=none
extra="$tmp/example.warc.zst $tmp/example.warc.whole.gz $tmp/page-middle.dat"

for f in $archives $extra; do
    for t in warc_reader validate index; do put $t "$f"; done
    case $f in *.warc | *.arc) put split "$f" ;; esac
    case $f in
        *.arc | *.arc.gz) put arc_reader "$f" ;;
        *.dat) put infomall_reader "$f" ;;
        *.gz | *.lz4 | *.zst | *.bad) put codec "$f" ;;
    esac
done

# HTTP messages and WARC header blocks cut out of the uncompressed WARCs.
python3 - "$fixtures" "$corpus" <<'PY'
import os, re, sys
fixtures, corpus = sys.argv[1], sys.argv[2]
def put(target, name, data):
    os.makedirs(os.path.join(corpus, target), exist_ok=True)
    with open(os.path.join(corpus, target, name), "wb") as f:
        f.write(data[:65536])
n = 0
for root, _, files in os.walk(fixtures):
    for fn in sorted(files):
        if not fn.endswith(".warc"):
            continue
        data = open(os.path.join(root, fn), "rb").read()
        for i, m in enumerate(re.finditer(rb"WARC/[0-9.]+\r?\n", data)):
            end = data.find(b"\r\n\r\n", m.end())
            if end < 0 or i > 20:
                break
            put("fields", f"{fn}-{i}", data[m.end():end + 4])
            nxt = data.find(b"WARC/1.", end)
            block = data[end + 4: nxt if nxt > 0 else len(data)]
            if block.startswith(b"HTTP/") or block[:8].split(b" ")[0] in (b"GET", b"POST", b"HEAD"):
                put("http_head", f"{fn}-{i}", block)
                if b"chunked" in block[:4096].lower():
                    body = block[block.find(b"\r\n\r\n") + 4:]
                    put("chunked", f"{fn}-{i}", body)
            n += 1
print(f"{n} header blocks")
PY

mkdir -p "$corpus/chunked" "$corpus/filter" "$corpus/values"
printf '5\r\nhello\r\n0\r\n\r\n' > "$corpus/chunked/simple"
printf '4;ext=1\r\nwiki\r\n5\r\npedia\r\n0\r\nTrailer: x\r\n\r\n' > "$corpus/chunked/ext"
i=0
for e in 'warc-type == "response" && http:status == 200 && :content-type =~ "text/html"' \
    ':length > 10000000' '!(:status >= 400 || :host == "example.com")' \
    "warc-target-uri !~ '^https?://'" '((:type == "request"))' ':offset <= -1 && http:server != "x"'; do
    printf '%s' "$e" > "$corpus/filter/$i"; i=$((i + 1))
done
for v in '2024-01-02T03:04:05Z' '2024-01-02T03:04:05.123456Z' '2024' '20240102030405' \
    'sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ' 'sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' \
    'WARC/1.1' 'WARC/1.0' 'response' 'warcinfo'; do
    printf '%s' "$v" > "$corpus/values/$i"; i=$((i + 1))
done
# derive_text: pages (the HTML payloads of the IANA crawl, as one file
# each would be; a WARC holding them reaches the same code) and a
# non-UTF-8 one.
mkdir -p "$corpus/derive_text"
put derive_text "$fixtures/pywb/example.warc" example.warc
put derive_text "$here/../crates/warchest-derive/tests/fixtures/wat-links.html"
printf '<meta charset=koi8-r><title>\xf0\xd2\xc9</title><p>a&amp;b<br>c<table><tr><td>1<td>2</table><script>x="</p>"</script>' > "$corpus/derive_text/koi8"
# search_request: query strings as serve's /fulltext gets them, and bare
# queries as `warchest search` does (field names, ranges, phrases, facets).
mkdir -p "$corpus/search_request"
i=0
for q in 'q=sea+level&page=2&n=1' 'q=%22sea+level%22&host=a.example&year=2014' \
    'q=title:caf%C3%A9&language=fra&mime=text/html' 'q=date:[2014-01-01T00:00:00Z+TO+*]' \
    'q=status:[100+TO+200]+AND+-url:x' 'q=(a+OR+b)+AND+(c+d)~2' 'title:sea^2 "plain words"' \
    'host:a.example AND year:2014' 'surt:"a,example)/" OR mime:text/plain'; do
    printf '%s' "$q" > "$corpus/search_request/$i"; i=$((i + 1))
done
# serve_request: the first byte picks the origin (bit 0: replay) and the
# method (bits 1-2: GET, HEAD, POST, OPTIONS); then the target and header
# lines, over the collection the target writes.
mkdir -p "$corpus/serve_request"
i=0
for r in '\x00/' '\x00/archive/cdx?url=a.example/&matchType=domain&output=json&fl=url,status&filter=!mime:text/css&limit=5' \
    '\x00/archive/cdx?url=*.example&from=2014&to=2015&sort=reverse&page=0&pageSize=3' \
    '\x00/archive/cdx?url=a.example/*&showNumPages=true&pageSize=1' \
    '\x00/archive/cdx?url=a.example/*&output=text&fields=url,nope&collapse=timestamp:6&collapse=urlkey&limit=-2' \
    '\x00/archive/cdx?url=a.example/&output=link&sort=closest&closest=2014&limit=-1&page=1' \
    '\x00/archive/cdx?url=a.example/*&limit=2&showResumeKey=true&resumeKey=com%2Cexample%29%2F+2015&offset=1&showDupeCount=on' \
    '\x00/archive/cdx?url=a.example/*&output=json&collapseTime=8&filter=statuscode:200&showSkipCount=1&showGroupCount=yes&lastSkipTimestamp=true&limit=-1' \
    '\x00/archive/cdx?url=a.example/app.js%3F_%3D1390767400%26cb%3Dx&sort=closest&closest=2014&from=2013&limit=-2&output=text&allowFuzzy=true' \
    '\x00/archive/timemap/link/http://a.example/' '\x01/archive/2015id_/http://a.example/' \
    '\x01/archive/2014mp_/http://a.example/\nCookie: __wb_cookie=s%3D1\nReferer: http://localhost/archive/2014mp_/http://a.example/' \
    '\x01/archive/20140126200625cs_/http://a.example/d/s.css' '\x01/archive/2014js_/http://a.example/app.js' \
    '\x01/archive/2014id_/http://a.example/x?b=2&a=1' '\x01/archive/2014sw_/http://a.example/app.js\nService-Worker: script' \
    '\x00/archive/http://a.example/r\nAccept-Datetime: Sun, 26 Jan 2014 20:06:24 GMT' '\x00/archive/*/a.example*' \
    '\x00/archive/record/fuzz.warc/0' '\x00/archive/file/fuzz.warc\nRange: bytes=10-20' \
    '\x02/archive/2014id_/http://b.example/doc.txt' '\x05/archive/2014id_/http://a.example/api' \
    '\x08/archive/cdx?url=a.example/*&output=json&fl=url,access' '\x09/archive/2014mp_/http://a.example/d/s.css\nX-User: staff' \
    '\x08/archive/record/fuzz.warc/0' '\x09/archive/file/fuzz.warc' '\x08/archive/*/http://a.example/r'; do
    printf '%b' "$r" > "$corpus/serve_request/$i"; i=$((i + 1))
done
# access_rules: pywb's access control files.
mkdir -p "$corpus/access_rules"
i=0
for r in 'org,httpbin)/anything/something - {"access": "allow", "url": "http://httpbin.org/anything/something"}\norg,httpbin)/anything - {"access": "exclude"}\norg,httpbin)/ - {"access": "block"}\ncom, - {"access": "allow"}' \
    'com,example)/restricted - {"access": "allow", "before": "20101201"}\ncom,example)/restricted - {"access": "block"}\ncom,example)/restricted - {"access": "allow_ignore_embargo", "user": "staff"}' \
    'com,example)/a### - {"access": "exclude"}\n*, - {"access": "block", "newer": {"years": 1, "days": 3}}\n# comment\n\ncom,example)/ - {"access": "allow", "older": {"months": 2}, "after": 2001}' \
    'com,example)/ - {"access": "exclude"}'; do
    printf '%b' "$r" > "$corpus/access_rules/$i"; i=$((i + 1))
done
# capture_wire: the first byte picks the piece size (bits 0-2), a request
# (bit 3), HEAD (bit 4) and the head limit (bits 5-7); then a server's
# answer (the HTTP responses of the fixtures, cut above), or a DNS answer,
# or FTP replies, or URLs and a redirect.
mkdir -p "$corpus/capture_wire"
for f in "$corpus"/http_head/*; do
    { printf '\xe2'; head -c 8192 "$f"; } > "$corpus/capture_wire/$(basename "$f")"
done
i=0
for r in '\xe0HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n' \
    '\xe8POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabcdef' \
    '\x00\x00\x07\x81\x80\x00\x01\x00\x01\x00\x00\x00\x00\x03www\x04test\x00\x00\x01\x00\x01\xc0\x0c\x00\x01\x00\x01\x00\x00\x01\x2c\x00\x04\x0a\x01\x02\x03' \
    '\x00\x00\x07\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x01a\x01b\x00\x00\x1c\x00\x01' \
    '\x03220-Welcome\r\n220 ready\r\n331 pw\r\n229 Entering Extended Passive Mode (|||6446|)\r\n227 Entering Passive Mode (127,0,0,1,4,1).\r\n226 done\r\n' \
    '\x00HTTPS://User:pw@Example.COM:8443/a/b?x=1#frag\n../c?d\n//other:81/p' '\x00http://[::1]:80?q\nhttps://s/'; do
    printf '%b' "$r" > "$corpus/capture_wire/$i"; i=$((i + 1))
done
# wacz: a small WACZ (an archive file stored, its index, pages, the data
# package and its digest) and the same with the index compressed.
python3 - "$fixtures" "$corpus" <<'PY'
import hashlib, io, json, os, sys, zipfile, gzip
fixtures, corpus = sys.argv[1], sys.argv[2]
os.makedirs(os.path.join(corpus, "wacz"), exist_ok=True)
warc = open(os.path.join(fixtures, "warcio", "example.warc"), "rb").read()[:24000]
cdxj = b'com,example)/ 20140216050221 {"url": "http://example.com/", "offset": 0, "length": 100, "filename": "data.warc"}\n'
pages = b'{"format": "json-pages-1.0", "id": "pages"}\n{"url": "http://example.com/", "ts": "2014-02-16T05:02:21Z"}\n'
def make(name, index):
    files = [("archive/data.warc", warc, zipfile.ZIP_STORED), index, ("pages/pages.jsonl", pages, zipfile.ZIP_DEFLATED)]
    res = [{"name": os.path.basename(n), "path": n, "hash": "sha256:" + hashlib.sha256(d).hexdigest(), "bytes": len(d)} for n, d, _ in files]
    pkg = json.dumps({"profile": "data-package", "wacz_version": "1.1.1", "resources": res}).encode()
    dig = json.dumps({"path": "datapackage.json", "hash": "sha256:" + hashlib.sha256(pkg).hexdigest()}).encode()
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w") as z:
        for n, d, c in files + [("datapackage.json", pkg, zipfile.ZIP_DEFLATED), ("datapackage-digest.json", dig, zipfile.ZIP_DEFLATED)]:
            z.writestr(zipfile.ZipInfo(n), d, compress_type=c)
    open(os.path.join(corpus, "wacz", name), "wb").write(b.getvalue())
make("plain", ("indexes/index.cdxj", cdxj, zipfile.ZIP_DEFLATED))
make("compressed", ("indexes/index.cdx.gz", gzip.compress(cdxj), zipfile.ZIP_STORED))
PY
# crawl_journal: the first byte picks the file (0: the bytes alone, 1:
# after a header of the frontier's epoch, 2: cut into records, a 16-bit
# length each); changes of each kind (queued, finished, retried, seen).
python3 - "$corpus" <<'PY'
import os, struct, sys
d = os.path.join(sys.argv[1], "crawl_journal")
os.makedirs(d, exist_ok=True)
def b(s): return struct.pack("<I", len(s)) + s
def uri(u, seed=0, hops="L", via=""): return f"{seed}\n{hops}\n{via}\n{u}\n0".encode()
add = b"\x01" + struct.pack("<I", 2) + b(uri("http://a.test/y")) + b(uri("http://c.test/", 1, "LE", "http://a.test/"))
done = b"\x02" + b(b"a.test\x00\x00\x00\x01") + b(b"a.test") + b"\x03" + struct.pack("<QQ", 512, 1000) + struct.pack("<I", 1) + b(uri("http://a.test/z"))
retry = b"\x03" + b(b"a.test\x00\x00\x00\x01") + b(b"a.test") + b(uri("http://a.test/")) + struct.pack("<Q", 30000)
seen = b"\x04" + struct.pack("<I", 1) + b(b"http://d.test/")
recs = b"".join(struct.pack("<H", len(p)) + p for p in (add, done, retry, seen))
open(os.path.join(d, "records"), "wb").write(b"\x02" + recs)
open(os.path.join(d, "torn"), "wb").write(b"\x02" + recs + b"\x05\x00")
open(os.path.join(d, "raw"), "wb").write(b"\x01" + struct.pack("<II", 1 << 31, 0) + b"x" * 16)
PY
for t in "$corpus"/*; do echo "$(basename "$t"): $(ls "$t" | wc -l) inputs"; done
