"""Archives where they live, from Python and Spark: ArchiveIterator, scan,
check, index, validate, convert, the writer and fetch over moto's S3 server and an HTTP server with ranges
(tests/remote/range_server.py), both on 127.0.0.1, compared with the same
calls on the local files."""

import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import warnings
import zipfile

import pytest

import warchest
from conftest import FIXTURES, REPO, SAMPLES, bare_lf_warc

pa = pytest.importorskip("pyarrow")

if not warchest.REMOTE:
    pytest.skip("built without the remote feature", allow_module_level=True)

BUCKET = "warchest-py"
PYWB = FIXTURES / "pywb"
# Compressed and plain, WARC and ARC: what the tests read remotely.
FILES = {
    "iana.warc.gz": PYWB / "iana.warc.gz",
    "example.warc.gz": PYWB / "example.warc.gz",
    "sample.warc.gz": SAMPLES / "sample.warc.gz",
    "chunked.warc": FIXTURES / "warcio" / "example-iana.org-chunked.warc",
}
# An ARC, for convert: uploaded and served beside FILES but not among
# them (the Spark test reads the bucket's *.warc.gz as FILES' .gz files).
ARCS = {"example.arc.gz": PYWB / "example.arc.gz"}


_GIVEN_PORTS = set()


def _free_port():
    """A free port for a server a child process binds, below the kernel's
    ephemeral range (32768-60999 on Linux), from which every bind to port 0
    and every outgoing connection takes its port: such a port, released
    here, could be taken before the child binds it. Remembered, so never
    given twice."""
    start = (os.getpid() ^ time.monotonic_ns()) % 12000
    for i in range(12000):
        port = 20000 + (start + i * 7919) % 12000
        if port in _GIVEN_PORTS:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _GIVEN_PORTS.add(port)
        return port
    raise RuntimeError("no free port in 20000-31999")


def _wait_for(port, proc, seconds=60):
    """Waits until the child `proc` listens on `port`; fails at once, with
    its stderr (a file), when it exits first, also when something answered
    (another process holding the port)."""

    def exited():
        if proc.poll() is None:
            return
        err = ""
        if getattr(proc, "stderr_file", None) is not None:
            proc.stderr_file.seek(0)
            err = proc.stderr_file.read().decode(errors="replace")
        pytest.fail(f"the server exited ({proc.returncode}) before listening on {port}: {err}")

    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        exited()
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            time.sleep(0.1)
            continue
        exited()
        return
    pytest.fail(f"no server on port {port} after {seconds} s")


@pytest.fixture(scope="module")
def s3():
    """moto's S3 server with the files uploaded (by boto3) under crawl/;
    the environment points warchest's S3 client at it."""
    boto3 = pytest.importorskip("boto3")
    port = _free_port()
    # stderr to a file (moto logs each request there; a pipe would fill).
    err = tempfile.TemporaryFile()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=err,
    )
    proc.stderr_file = err
    try:
        _wait_for(port, proc)
        endpoint = f"http://127.0.0.1:{port}"
        env = {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": "us-east-1",
            "AWS_ALLOW_HTTP": "true",
        }
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        client = boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        )
        client.create_bucket(Bucket=BUCKET)
        for name, path in {**FILES, **ARCS}.items():
            client.upload_file(str(path), BUCKET, f"crawl/{name}")
        yield {"env": env, "client": client, "prefix": f"s3://{BUCKET}/crawl/"}
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    finally:
        proc.kill()
        proc.wait(timeout=30)


# A WACZ of two of them (one gzip, one plain), stored as WACZ stores its
# WARC files: made at run time, served as x.wacz.
WACZ_MEMBERS = ["iana.warc.gz", "chunked.warc"]


@pytest.fixture(scope="module")
def wacz(tmp_path_factory):
    path = tmp_path_factory.mktemp("wacz") / "x.wacz"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("datapackage.json", "{}", compress_type=zipfile.ZIP_DEFLATED)
        for n in WACZ_MEMBERS:
            z.write(FILES[n], f"archive/{n}")
    return path


@pytest.fixture(scope="module")
def http_root(tmp_path_factory, wacz):
    """tests/remote/range_server.py serving the files (206 answers to
    ranges, as Python's http.server does not give) and the WACZ."""
    root = tmp_path_factory.mktemp("served")
    for name, path in {**FILES, **ARCS}.items():
        (root / name).symlink_to(path)
    (root / "x.wacz").symlink_to(wacz)
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "tests" / "remote" / "range_server.py"), str(root)],
        stdout=subprocess.PIPE,
        env={**os.environ, "MAX_SECONDS": "600"},
    )
    try:
        port = int(proc.stdout.readline())
        yield f"http://127.0.0.1:{port}/"
    finally:
        proc.kill()
        proc.wait(timeout=30)


def records(source, **kw):
    """What a reader gives: offset, type, target, length and a digest of
    the payload of every record."""
    out = []
    for r in warchest.ArchiveIterator(source, **kw):
        body = r.content_stream().read()
        out.append(
            (
                r.offset,
                r.rec_type,
                r.rec_headers.get_header("WARC-Target-URI"),
                r.rec_headers.get_header("WARC-Record-ID"),
                hashlib.sha1(body).hexdigest(),
            )
        )
    return out


def table_without_filename(reader):
    t = reader.read_all()
    return t.drop_columns(["warc_filename"]), t["warc_filename"].to_pylist()


@pytest.mark.parametrize("name", sorted(FILES))
def test_iterator_over_s3_and_http_equals_local(s3, http_root, name):
    want = records(str(FILES[name]))
    assert len(want) >= 3
    assert records(s3["prefix"] + name) == want
    assert records(http_root + name) == want


def test_scan_over_s3_and_http_equals_local(s3, http_root):
    names = sorted(FILES)
    local, _ = table_without_filename(
        warchest.scan([str(FILES[n]) for n in names], include_payload=True)
    )
    for base in (s3["prefix"], http_root):
        urls = [base + n for n in names]
        got, filenames = table_without_filename(warchest.scan(urls, include_payload=True))
        assert got.equals(local), base
        assert set(filenames) == set(urls)
    # Byte ranges of a plain object give what those of the file give.
    plain = FILES["chunked.warc"]
    url = s3["prefix"] + "chunked.warc"
    assert warchest.split_ranges(url, 2000) == warchest.split_ranges(str(plain), 2000)
    for r in warchest.split_ranges(str(plain), 2000):
        want = warchest.scan(str(plain), byte_range=r, columns=["warc_record_offset"]).read_all()
        got = warchest.scan(url, byte_range=r, columns=["warc_record_offset"]).read_all()
        assert got.equals(want)


@pytest.fixture(scope="module")
def plain_http_root(tmp_path_factory, wacz):
    """Python's own http.server, which answers a Range request with the
    whole file (200), as some plain file servers do (issue 34)."""
    root = tmp_path_factory.mktemp("plain-served")
    for name, path in FILES.items():
        (root / name).symlink_to(path)
    (root / "x.wacz").symlink_to(wacz)
    # Port 0: the server binds a port of its own and says which on its
    # first line ("Serving HTTP on 127.0.0.1 port N (...) ..."), unbuffered.
    proc = subprocess.Popen(
        [sys.executable, "-u", "-m", "http.server", "-b", "127.0.0.1", "-d", str(root), "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        line = proc.stdout.readline().decode(errors="replace")
        m = re.search(r" port (\d+) ", line)
        assert m, f"http.server said: {line!r} (exit {proc.poll()})"
        yield f"http://127.0.0.1:{m.group(1)}/"
    finally:
        proc.kill()
        proc.wait(timeout=30)


@pytest.mark.parametrize("name", ["iana.warc.gz", "chunked.warc"])
def test_iterator_and_scan_stream_a_server_without_ranges(plain_http_root, name):
    """A sequential read streams a URL whose server ignores ranges from
    the start, as warcio does, instead of failing."""
    url = plain_http_root + name
    want = records(str(FILES[name]))
    assert len(want) >= 3
    assert records(url) == want
    local, _ = table_without_filename(warchest.scan(str(FILES[name]), include_payload=True))
    got, _ = table_without_filename(warchest.scan(url, include_payload=True))
    assert got.equals(local)


def test_a_wacz_by_url_reads_as_its_archive_files(s3, http_root, wacz):
    """ArchiveIterator and scan read a WACZ named by URL as the local one:
    its archive files, read by range where they lie in the object (its
    directory first), named URL#archive/NAME; not the ZIP's bytes."""
    s3["client"].upload_file(str(wacz), BUCKET, "wacz/x.wacz")
    want = records(str(wacz))
    assert want == [r for n in WACZ_MEMBERS for r in records(str(FILES[n]))]
    assert len(want) > 10
    local, local_names = table_without_filename(warchest.scan(str(wacz), include_payload=True))
    size = wacz.stat().st_size
    for url in (f"s3://{BUCKET}/wacz/x.wacz", http_root + "x.wacz"):
        assert records(url) == want, url
        got, names = table_without_filename(warchest.scan(url, include_payload=True))
        assert got.equals(local), url
        assert names == [n.replace(str(wacz), url) for n in local_names]
        assert f"{url}#archive/chunked.warc" in names
        # That name given back reads the archive file alone.
        assert records(f"{url}#archive/chunked.warc") == records(str(FILES["chunked.warc"]))
        # Not split, as the local one: a range from 0 reads it all.
        assert warchest.split_ranges(url, 100) == [(0, size)]
        assert warchest.scan(url, byte_range=(100, size)).read_all().num_rows == 0


def test_a_wacz_by_url_replaced_while_it_is_read_is_refused(s3, wacz, tmp_path):
    """Its archive files are read where the directory listed first put
    them: a WACZ replaced by one of another size is refused when the next
    archive file is opened, naming both sizes, not read at offsets the new
    bytes do not keep (as `warchest ls URL.wacz` refuses it)."""
    client = s3["client"]
    client.upload_file(str(wacz), BUCKET, "wacz/replaced.wacz")
    url = f"s3://{BUCKET}/wacz/replaced.wacz"
    it = iter(warchest.ArchiveIterator(url))
    first = next(it)
    assert first.rec_headers.get_header("WARC-Type") == "warcinfo"
    bigger = tmp_path / "bigger.wacz"
    with zipfile.ZipFile(bigger, "w") as z:
        for n in ["chunked.warc", *WACZ_MEMBERS]:
            z.write(FILES[n], f"archive/{'extra-' if n == 'chunked.warc' else ''}{n}")
    client.upload_file(str(bigger), BUCKET, "wacz/replaced.wacz")
    size, now = wacz.stat().st_size, bigger.stat().st_size
    with pytest.raises(Exception, match=f"{url}: the WACZ is {now} bytes, not the {size} it was listed at"):
        for _ in it:
            pass


def test_a_wacz_by_url_with_no_archive_file_or_missing_is_refused(s3):
    """As a local one: a WACZ with nothing under archive/ is refused (not
    an empty result), and a missing one names itself."""
    client = s3["client"]
    client.put_object(Bucket=BUCKET, Key="wacz/empty.wacz", Body=_zip_of({"datapackage.json": "{}"}))
    empty = f"s3://{BUCKET}/wacz/empty.wacz"
    with pytest.raises(warchest.ArchiveError, match=f"{empty}: .*no archive file"):
        warchest.ArchiveIterator(empty)
    with pytest.raises(Exception, match="no archive file"):
        warchest.scan(empty).read_all()
    gone = f"s3://{BUCKET}/wacz/gone.wacz"
    with pytest.raises(OSError, match="gone.wacz"):
        warchest.ArchiveIterator(gone)


def test_a_wacz_on_a_server_without_ranges_is_an_error(plain_http_root):
    """A ZIP is read from its end: a server that answers no byte ranges
    cannot serve one in place, and says so (not read as the ZIP's bytes)."""
    url = plain_http_root + "x.wacz"
    with pytest.raises(OSError, match=f"{url}: .*does not support byte ranges"):
        warchest.ArchiveIterator(url)
    with pytest.raises(Exception, match="does not support byte ranges"):
        warchest.scan(url).read_all()


def _zip_of(members):
    import io

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, text in members.items():
            z.writestr(name, text)
    return buf.getvalue()


def test_missing_object_is_an_error_naming_it(s3):
    url = s3["prefix"] + "gone.warc.gz"
    with pytest.raises(OSError, match="gone.warc.gz"):
        warchest.ArchiveIterator(url)
    t = warchest.scan([url, s3["prefix"] + "example.warc.gz"], skip_errors=True).read_all()
    errors = [e for e in t["error"].to_pylist() if e]
    assert len(errors) == 1 and "gone.warc.gz" in errors[0]
    assert t.num_rows > 1


def told(call):
    """What `call()` returns and the RecoveryWarnings it gives (their text)."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = call()
    return got, [str(w.message) for w in seen if issubclass(w.category, warchest.RecoveryWarning)]


def renamed(value, names):
    """`value` (dicts and lists, as the tools return them) with each local
    name of `names` replaced by its URL wherever it is written: in `file`
    fields, in `FILE.wacz#archive/NAME`, in messages."""
    text = json.dumps(value)
    for local, url in names.items():
        text = text.replace(json.dumps(local)[1:-1], json.dumps(url)[1:-1])
    return json.loads(text)


def bases(s3, http_root):
    return (s3["prefix"], http_root)


@pytest.mark.parametrize("name", sorted(FILES))
def test_check_over_s3_and_http_equals_local(s3, http_root, name):
    """check(URL) gives what check(path) gives, every record's `file` the
    URL as given."""
    local = str(FILES[name])
    want = warchest.check(local)
    assert len(want) >= 3 and {r["file"] for r in want} == {local}
    for base in bases(s3, http_root):
        url = base + name
        got = warchest.check(url)
        assert got == renamed(want, {local: url}), url
        assert {r["file"] for r in got} == {url}


def index_entries(path, fmt):
    """The entries of an index `index` wrote: the lines of a CDXJ file,
    the rows of a Parquet one."""
    if fmt == "cdxj":
        out = []
        for line in path.read_text().splitlines():
            key, stamp, fields = line.split(" ", 2)
            out.append({**json.loads(fields), "key": key, "timestamp": stamp})
        return out
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()


@pytest.mark.parametrize("fmt", ["cdxj", "parquet"])
def test_index_over_s3_and_http_equals_local(s3, http_root, tmp_path, fmt):
    """index of URLs writes the entries index of the local files writes,
    each file named by its base name (as `warchest index URL` names it):
    the served name, where the fixture's own differs."""
    names = sorted(FILES)
    n = warchest.index([str(FILES[x]) for x in names], tmp_path / "local", format=fmt)
    assert n > 10
    base_names = {FILES[x].name: x for x in names}
    assert base_names != {x: x for x in names}, "no name to map"
    want = index_entries(tmp_path / "local", fmt)
    key = "filename" if fmt == "cdxj" else "warc_filename"
    for e in want:
        e[key] = base_names[e[key]]
    assert len(want) == n
    for i, base in enumerate(bases(s3, http_root)):
        out = tmp_path / f"remote{i}"
        assert warchest.index([base + x for x in names], out, format=fmt) == n, base
        assert index_entries(out, fmt) == want, base


def test_validate_over_s3_and_http_equals_local(s3, http_root):
    """validate of URLs gives the findings and summary of the local files,
    each named by its URL."""
    names = sorted(FILES)
    local = [str(FILES[x]) for x in names]
    want = warchest.validate(local)
    assert [f["file"] for f in want["summary"]["files"]] == local
    assert want["findings"], "nothing to compare"
    for base in bases(s3, http_root):
        urls = [base + x for x in names]
        got = warchest.validate(urls)
        assert got == renamed(want, dict(zip(local, urls))), base
        assert [f["file"] for f in got["summary"]["files"]] == urls


def converted(path):
    """The records of a converted file, without what each conversion makes
    anew (record ids, the warcinfo's date)."""
    out = []
    for r in warchest.ArchiveIterator(str(path)):
        out.append(
            (
                r.offset,
                r.rec_type,
                r.rec_headers.get_header("WARC-Target-URI"),
                hashlib.sha1(r.content_stream().read()).hexdigest(),
            )
        )
    return out


@pytest.mark.parametrize("name", ["example.arc.gz", "iana.warc.gz"])
def test_convert_over_s3_and_http_equals_local(s3, http_root, tmp_path, name):
    """convert(URL, OUT) reports what convert(path, OUT) reports and writes
    the same records."""
    local = str({**FILES, **ARCS}[name])
    # Each output of the same name: the warcinfo names it.
    (tmp_path / "local").mkdir()
    want = warchest.convert(local, tmp_path / "local" / "out.warc.gz")
    assert want["records_read"] >= 1
    want_recs = converted(tmp_path / "local" / "out.warc.gz")
    assert len(want_recs) == want["records_written"]
    for i, base in enumerate(bases(s3, http_root)):
        out = tmp_path / f"remote{i}" / "out.warc.gz"
        out.parent.mkdir()
        assert warchest.convert(base + name, out) == want, base
        assert converted(out) == want_recs, base


def test_tools_read_a_wacz_by_url_as_its_archive_files(s3, http_root, wacz, tmp_path):
    """check, index, validate and convert read a WACZ named by URL as the
    local one: its archive files, named URL#archive/NAME (index: NAME's
    base name), not the ZIP's bytes."""
    s3["client"].upload_file(str(wacz), BUCKET, "wacz/x.wacz")
    local = str(wacz)
    want_check = warchest.check(local)
    assert {r["file"] for r in want_check} == {f"{local}#archive/{n}" for n in WACZ_MEMBERS}
    want_valid = warchest.validate(local)
    assert len(want_valid["summary"]["files"]) == len(WACZ_MEMBERS)
    n = warchest.index(local, tmp_path / "local.cdxj")
    assert n > 10
    want_index = (tmp_path / "local.cdxj").read_bytes()
    (tmp_path / "local").mkdir()
    want_conv = warchest.convert(local, tmp_path / "local" / "out.warc.gz")
    want_recs = converted(tmp_path / "local" / "out.warc.gz")
    assert len(want_recs) == want_conv["records_written"] and want_conv["records_read"] > 10
    for i, url in enumerate((f"s3://{BUCKET}/wacz/x.wacz", http_root + "x.wacz")):
        names = {local: url}
        got = warchest.check(url)
        assert got == renamed(want_check, names), url
        assert f"{url}#archive/chunked.warc" in {r["file"] for r in got}
        assert warchest.validate(url) == renamed(want_valid, names), url
        assert warchest.index(url, tmp_path / f"{i}.cdxj") == n
        assert (tmp_path / f"{i}.cdxj").read_bytes() == want_index
        out = tmp_path / f"remote{i}" / "out.warc.gz"
        out.parent.mkdir()
        assert warchest.convert(url, out) == want_conv
        assert converted(out) == want_recs


def test_tools_tell_the_recoveries_of_an_object_under_its_url(s3, tmp_path):
    """What reading an object recovered from is told as for a local file,
    named by the URL: check, index and convert give the same
    RecoveryWarning, validate the same findings."""
    local = bare_lf_warc(tmp_path / "bare.warc")
    url = f"s3://{BUCKET}/told/bare.warc"
    s3["client"].upload_file(str(local), BUCKET, "told/bare.warc")
    names = {str(local): url}
    saying = [f"{url}: 2 lenient recoveries: bare-lf (2), the first at offset 28"]
    for call in (
        lambda src, out: warchest.check(src),
        lambda src, out: warchest.index(src, out / "i.cdxj"),
        lambda src, out: warchest.convert(src, out / "c.warc.gz"),
    ):
        (tmp_path / "l").mkdir()
        (tmp_path / "r").mkdir()
        want, want_told = told(lambda: call(str(local), tmp_path / "l"))
        got, got_told = told(lambda: call(url, tmp_path / "r"))
        assert got_told == renamed(want_told, names) == saying
        assert got == renamed(want, names)
        shutil.rmtree(tmp_path / "l")
        shutil.rmtree(tmp_path / "r")
    want = warchest.validate(str(local))
    assert ("warc.header.line-end", 28) in {(f["rule"], f["offset"]) for f in want["findings"]}
    assert warchest.validate(url) == renamed(want, names)


@pytest.mark.parametrize("name", ["iana.warc.gz", "chunked.warc"])
def test_tools_stream_a_server_without_ranges(plain_http_root, tmp_path, name):
    """check, index, validate and convert read a URL whose server ignores
    ranges from its start, as the iterator does: what they give on the
    local file, names mapped."""
    local, url = str(FILES[name]), plain_http_root + name
    names = {local: url}
    assert warchest.check(url) == renamed(warchest.check(local), names)
    assert warchest.validate(url) == renamed(warchest.validate(local), names)
    n = warchest.index(local, tmp_path / "l.cdxj")
    assert n >= 1 and warchest.index(url, tmp_path / "r.cdxj") == n
    want = (tmp_path / "l.cdxj").read_text().replace(FILES[name].name, name)
    assert (tmp_path / "r.cdxj").read_text() == want
    for d in ("l", "r"):
        (tmp_path / d).mkdir()
    want = warchest.convert(local, tmp_path / "l" / "out.warc.gz")
    assert warchest.convert(url, tmp_path / "r" / "out.warc.gz") == want
    assert converted(tmp_path / "r" / "out.warc.gz") == converted(tmp_path / "l" / "out.warc.gz")


def test_tools_raise_for_a_missing_object_naming_it(s3, http_root, tmp_path):
    """A missing object is an OSError naming it and the server's answer
    (not a local file not found), for each tool, and no output is left
    (not an empty result)."""
    for base in bases(s3, http_root):
        gone = base + "gone.warc.gz"
        said = re.escape(gone) + ": at byte 0: 404 Not Found"
        with pytest.raises(OSError, match=said):
            warchest.check(gone)
        with pytest.raises(OSError, match=said):
            warchest.index([base + "example.warc.gz", gone], tmp_path / "out.cdxj")
        with pytest.raises(OSError, match=said):
            warchest.validate([base + "example.warc.gz", gone])
        with pytest.raises(OSError, match=said):
            warchest.convert(gone, tmp_path / "out.warc.gz")
        assert list(tmp_path.iterdir()) == []


def test_list_files(s3):
    listed = warchest.list_files(s3["prefix"] + "*.warc.gz")
    assert [u for u, _ in listed] == [s3["prefix"] + n for n in sorted(FILES) if n.endswith(".gz")]
    assert all(size == FILES[u.rsplit("/", 1)[1]].stat().st_size for u, size in listed)


def test_the_spark_source_refuses_a_url_with_no_object(s3):
    # As Spark's own sources fail for a path that does not exist: not an
    # empty table.
    pytest.importorskip("pyspark")
    import pyspark_warchest

    nothing = f"s3://{BUCKET}/nothing/"
    with pytest.raises(FileNotFoundError, match=f"{nothing}: no object found there"):
        pyspark_warchest.plan_partitions({"path": nothing})
    assert len(pyspark_warchest.plan_partitions({"path": s3["prefix"] + "*.warc.gz"})) > 1


def test_writer_to_s3_appears_when_closed(s3):
    url = f"s3://{BUCKET}/out/new.warc.gz"
    keys = lambda: [o["Key"] for o in s3["client"].list_objects_v2(Bucket=BUCKET).get("Contents", [])]
    w = warchest.WARCWriter(url)
    w.write_warcinfo("new.warc.gz", {"operator": "test"})
    w.write_record("resource", "http://example.com/", b"hello" * 1000, content_type="text/plain")
    assert "out/new.warc.gz" not in keys()
    w.close()
    assert "out/new.warc.gz" in keys()
    got = [(r.rec_type, r.content_stream().read()) for r in warchest.ArchiveIterator(url)]
    assert got[1] == ("resource", b"hello" * 1000) and len(got) == 2
    # An exception in the with block: the upload is aborted, nothing appears.
    with pytest.raises(RuntimeError):
        with warchest.WARCWriter(f"s3://{BUCKET}/out/aborted.warc.gz") as w:
            w.write_record("resource", "http://example.com/", b"x")
            raise RuntimeError("stop")
    assert "out/aborted.warc.gz" not in keys()


def index_rows(names, relative=True):
    """(filename, offset, length) of every record of the files, as an index
    gives them (cc-index: relative filenames)."""
    rows = []
    for n in names:
        t = warchest.scan(
            str(FILES[n]), columns=["warc_record_offset", "warc_record_length"]
        ).read_all()
        for o, l in zip(t["warc_record_offset"].to_pylist(), t["warc_record_length"].to_pylist()):
            rows.append((n if relative else str(FILES[n]), o, l))
    return rows


def test_fetch_gives_the_bytes_of_the_local_ranges(s3, http_root):
    rows = index_rows(["iana.warc.gz", "example.warc.gz"])
    assert len(rows) > 40
    want = []
    for n, o, l in rows:
        with open(FILES[n], "rb") as f:
            f.seek(o)
            want.append(f.read(l))
    for prefix in (s3["prefix"], http_root):
        got = list(warchest.fetch(rows, prefix=prefix, raw=True, concurrency=4))
        assert got == want, prefix
    # Records: as the local iterator gives them, offsets in the file.
    local = [r for n in ("iana.warc.gz", "example.warc.gz") for r in records(str(FILES[n]))]
    got = []
    for r in warchest.fetch(rows, prefix=s3["prefix"]):
        body = r.content_stream().read()
        got.append(
            (
                r.offset,
                r.rec_type,
                r.rec_headers.get_header("WARC-Target-URI"),
                r.rec_headers.get_header("WARC-Record-ID"),
                hashlib.sha1(body).hexdigest(),
            )
        )
    assert got == local
    # Arrow batches: scan's rows, filenames resolved.
    t = warchest.fetch(rows, prefix=s3["prefix"], arrow=True, include_payload=True, batch_rows=10).read_all()
    want_t = warchest.scan(
        [str(FILES["iana.warc.gz"]), str(FILES["example.warc.gz"])], include_payload=True
    ).read_all()
    assert t.drop_columns(["warc_filename"]).equals(want_t.drop_columns(["warc_filename"]))
    assert set(t["warc_filename"].to_pylist()) == {
        s3["prefix"] + "iana.warc.gz",
        s3["prefix"] + "example.warc.gz",
    }


def test_fetch_coalesces_neighbouring_rows(http_root):
    import urllib.request

    def gets():
        with urllib.request.urlopen(http_root + "_count") as r:
            return int(r.read().split()[0])

    # Every other record of one file: gaps between the ranges.
    rows = index_rows(["iana.warc.gz"])[::2]
    assert len(rows) > 10
    want = []
    with open(FILES["iana.warc.gz"], "rb") as f:
        for _, o, l in rows:
            f.seek(o)
            want.append(f.read(l))
    before = gets()
    got = list(warchest.fetch(rows, prefix=http_root, raw=True, concurrency=4, max_gap=0))
    assert got == want
    assert gets() - before == len(rows), "max_gap=0: a request per row"
    before = gets()
    got = list(warchest.fetch(rows, prefix=http_root, raw=True, concurrency=4))
    assert got == want
    assert gets() - before == 1, "the default gap: one request for them all"
    with pytest.raises(ValueError):
        warchest.fetch(rows, prefix=http_root, max_gap=-1)


def test_fetch_reports_rows_it_cannot_fetch(s3):
    good = index_rows(["example.warc.gz"])
    size = FILES["example.warc.gz"].stat().st_size
    bad = [
        ("gone.warc.gz", 0, 100),
        ("example.warc.gz", size + 10, 100),
        ("example.warc.gz", 0, 0),
    ]
    rows = [bad[0]] + good + bad[1:]
    fetched = warchest.fetch(rows, prefix=s3["prefix"], on_error="skip")
    got = [r.offset for r in fetched]
    assert got == [o for _, o, _ in good]
    assert [f[0] for f in fetched.failures] == [0, len(good) + 1, len(good) + 2]
    assert "gone.warc.gz" in fetched.failures[0][4]
    assert str(size + 10) in fetched.failures[1][4]
    with pytest.raises(warchest.FetchError) as e:
        list(warchest.fetch(rows, prefix=s3["prefix"]))
    assert "3 of" in str(e.value) and len(e.value.failures) == 3
    t = warchest.fetch(rows, prefix=s3["prefix"], arrow=True).read_all()
    errors = [(f, o) for f, o, e in zip(
        t["warc_filename"].to_pylist(), t["warc_record_offset"].to_pylist(), t["error"].to_pylist()
    ) if e]
    assert errors == [
        (s3["prefix"] + "gone.warc.gz", 0),
        (s3["prefix"] + "example.warc.gz", size + 10),
        (s3["prefix"] + "example.warc.gz", 0),
    ]
    assert t.num_rows == len(good) + 3


def test_spark_reads_the_bucket(spark, s3):
    opts = {f"env.{k}": v for k, v in s3["env"].items()}
    df = spark.read.format("warc").options(**opts).load(s3["prefix"] + "*.warc.gz")
    gz = [n for n in sorted(FILES) if n.endswith(".gz")]
    assert df.rdd.getNumPartitions() == len(gz)
    key = ["warc_filename", "warc_record_offset", "warc_record_id", "http_status"]
    got = sorted(tuple(r) for r in df.select(*key).collect())
    t = warchest.scan([str(FILES[n]) for n in gz], columns=key).read_all()
    rename = {str(FILES[n]): s3["prefix"] + n for n in gz}
    want = sorted(
        (rename[f], o, i, s)
        for f, o, i, s in zip(*(t[c].to_pylist() for c in key))
    )
    assert got == want and len(got) > 50


def test_spark_index_then_fetch_example(spark, s3, tmp_path):
    import importlib.util

    # A cc-index-like Parquet table: relative warc_filename, offsets, lengths.
    rows = index_rows(["iana.warc.gz", "example.warc.gz"])
    names = [n for n, _, _ in rows]
    status = warchest.scan(
        [str(FILES["iana.warc.gz"]), str(FILES["example.warc.gz"])], columns=["http_status"]
    ).read_all()["http_status"].to_pylist()
    index = pa.table(
        {
            "warc_filename": names,
            "warc_record_offset": pa.array([o for _, o, _ in rows], pa.int32()),
            "warc_record_length": pa.array([l for _, _, l in rows], pa.int32()),
            "fetch_status": status,
        }
    )
    import pyarrow.parquet as pq

    (tmp_path / "index").mkdir()
    pq.write_table(index, tmp_path / "index" / "part-0.parquet")
    spec = importlib.util.spec_from_file_location("example_cc_index_fetch", REPO / "examples" / "cc_index_fetch.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = mod.main(
        spark,
        str(tmp_path / "index"),
        s3["prefix"],
        "fetch_status = 200",
        env=s3["env"],
    )
    got = sorted((r["warc_filename"], r["warc_record_offset"], bytes(r["payload"])) for r in out.collect())
    want = []
    for n in ("iana.warc.gz", "example.warc.gz"):
        t = warchest.scan(str(FILES[n]), include_payload=True).read_all()
        for o, s, p in zip(
            t["warc_record_offset"].to_pylist(), t["http_status"].to_pylist(), t["payload"].to_pylist()
        ):
            if s == 200:
                want.append((s3["prefix"] + n, o, p))
    assert got == sorted(want) and len(got) > 10


def test_fetch_of_local_paths():
    rows = index_rows(["example.warc.gz"], relative=False)
    path = str(FILES["example.warc.gz"])
    with open(path, "rb") as f:
        data = f.read()
    got = list(warchest.fetch(rows, raw=True))
    assert got == [data[o : o + l] for _, o, l in rows] and len(got) >= 3
    # A relative name resolves against a local directory prefix too.
    rel = [(os.path.basename(path), o, l) for _, o, l in rows]
    assert list(warchest.fetch(rel, prefix=os.path.dirname(path), raw=True)) == got
    past = warchest.fetch([(path, len(data) - 5, 100)], raw=True, on_error="skip")
    assert list(past) == [] and "past the end" in past.failures[0][4]
    assert path in past.failures[0][4]


def test_fetch_of_a_parquet_index(tmp_path):
    """A cc-index Parquet file as fetch's rows, as `warchest fetch` takes
    one: the rows its selection picks, names resolved against the index's
    directory, byte for byte the indexed records."""
    import shutil

    pq = pytest.importorskip("pyarrow.parquet")
    src = tmp_path / "iana.warc.gz"
    shutil.copy(FILES["iana.warc.gz"], src)
    index = tmp_path / "iana.parquet"
    warchest.index(src, index, format="parquet")
    table = pq.read_table(index).to_pylist()
    data = src.read_bytes()
    every = warchest.select_index(index)
    assert len(every) == len(table) > 3
    assert all(r["filename"] == "iana.warc.gz" and len(r["timestamp"]) == 14 for r in every)
    want = [r for r in table if r["fetch_status"] == 200 and r["content_mime_type"] == "text/html"]
    sel = warchest.select_index(index, status=200, mime="TEXT/HTML")
    assert [(r["offset"], r["url"]) for r in sel] == [
        (r["warc_record_offset"], r["url"]) for r in want
    ] and sel
    assert len(warchest.select_index(index, limit=2)) == 2
    assert warchest.select_index(index, host="no.such.host") == []
    got = list(warchest.fetch(str(index), select={"status": 200}, raw=True))
    rows = [r for r in table if r["fetch_status"] == 200]
    assert got == [
        data[r["warc_record_offset"] : r["warc_record_offset"] + r["warc_record_length"]] for r in rows
    ] and got
    records = list(warchest.fetch(index, select={"limit": 1}))
    assert len(records) == 1
    with pytest.raises(ValueError):
        warchest.select_index(tmp_path / "iana.cdxj")


def test_parquet_rows_without_offset_or_length_are_told(tmp_path):
    """Rows of a Parquet index with a null or negative offset or length
    are passed over, counted and told in the command's words (`warchest
    fetch` prints the same sentence and exits 1), by select_index and by
    fetch of the index; the others are selected."""
    from conftest import recovery_warnings

    import shutil

    pq = pytest.importorskip("pyarrow.parquet")
    src = tmp_path / "iana.warc.gz"
    shutil.copy(FILES["iana.warc.gz"], src)
    index = tmp_path / "iana.parquet"
    warchest.index(src, index, format="parquet")
    table = pq.read_table(index)
    offsets = table["warc_record_offset"].to_pylist()
    lengths = table["warc_record_length"].to_pylist()
    offsets[0] = None
    lengths[1] = -5
    for name, values in (("warc_record_offset", offsets), ("warc_record_length", lengths)):
        i = table.schema.get_field_index(name)
        table = table.set_column(i, pa.field(name, pa.int64()), pa.array(values, pa.int64()))
    holed = tmp_path / "holed.parquet"
    pq.write_table(table, holed)
    told_once = f"{holed}: 2 rows without a usable offset or length (null or negative) not understood"
    rows, told = recovery_warnings(lambda: warchest.select_index(holed))
    assert told == [told_once]
    assert len(rows) == len(offsets) - 2
    assert [r["offset"] for r in rows] == offsets[2:]
    _, told = recovery_warnings(lambda: list(warchest.fetch(str(holed), select={"limit": 1}, raw=True)))
    assert told == [told_once]
    # A whole index says nothing.
    _, told = recovery_warnings(lambda: warchest.select_index(index))
    assert told == []
