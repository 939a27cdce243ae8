"""Text of the HTML responses of a set of WARCs, as a Parquet table of
(url, date, text): the first step of WET extraction and of most corpus
building. The payload comes decoded (chunking and gzip removed) from the
warc data source; the text is taken with Python's own html.parser.

    python examples/html_text.py OUTPUT_DIR crawl/*.warc.gz
"""

import sys
from html.parser import HTMLParser


class _Text(HTMLParser):
    SKIP = {"script", "style", "noscript", "template"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts = []
        self.skipping = 0

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.skipping += 1

    def handle_endtag(self, tag):
        if tag in self.SKIP and self.skipping:
            self.skipping -= 1

    def handle_data(self, data):
        if not self.skipping and data.strip():
            self.parts.append(" ".join(data.split()))


def html_to_text(payload, charset="utf-8"):
    p = _Text()
    p.feed(bytes(payload).decode(charset or "utf-8", errors="replace"))
    p.close()
    return "\n".join(p.parts)


def charset_of(content_type):
    for part in (content_type or "").split(";")[1:]:
        k, _, v = part.partition("=")
        if k.strip().lower() == "charset":
            return v.strip().strip('"') or None
    return None


def main(spark, output_dir, paths):
    df = (
        spark.read.format("warc")
        .option("recordTypes", "response")
        .option("columns", "warc_target_uri,warc_date,http_status,http_content_type,payload")
        .load(paths)
        .where("http_status = 200 AND lower(http_content_type) LIKE 'text/html%'")
    )

    def extract(row):
        cs = charset_of(row["http_content_type"])
        try:
            text = html_to_text(row["payload"], cs)
        except LookupError:  # an unknown charset name
            text = html_to_text(row["payload"])
        return (row["warc_target_uri"], row["warc_date"], text)

    texts = spark.createDataFrame(df.rdd.map(extract), "url string, date timestamp, text string")
    texts.write.mode("overwrite").parquet(output_dir)
    return spark.read.parquet(output_dir)


if __name__ == "__main__":
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName("html-text").getOrCreate()
    main(spark, sys.argv[1], sys.argv[2:]).show(10)
