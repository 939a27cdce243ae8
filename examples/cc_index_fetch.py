"""Index, then fetch: the records a cc-index selection names, fetched from
the archive's bucket by range requests, as one Spark DataFrame.

cc-pyspark's CCIndexWarcSparkJob as one call: select rows of Common Crawl's
columnar index (Parquet) with SQL, then ``pyspark_warchest.fetch`` fetches
each selected record (one range request per row, concurrently within each
task) straight from the store on the executors.

    python examples/cc_index_fetch.py INDEX_DIR PREFIX "SQL CONDITION" [OUTPUT_DIR]

INDEX_DIR is a Parquet table with warc_filename, warc_record_offset and
warc_record_length (cc-index's columns; local, or wherever Spark reads
Parquet from); PREFIX resolves its relative warc_filename
(``s3://commoncrawl/`` or ``https://data.commoncrawl.org/`` for Common
Crawl). A local S3-compatible endpoint is given by the usual variables
(AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION,
AWS_ALLOW_HTTP=true for plain http), which are passed on to the executors.
For example, against a MinIO or moto server on localhost::

    AWS_ENDPOINT_URL=http://127.0.0.1:9000 AWS_ALLOW_HTTP=true \\
    AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... AWS_REGION=us-east-1 \\
    python examples/cc_index_fetch.py index/ s3://bucket/ \\
        "fetch_status = 200 AND content_mime_type = 'text/html'" out/
"""

import os
import sys

import pyspark_warchest

# The settings an executor needs to reach the store, passed on to it.
ENV_PREFIXES = ("AWS_", "GOOGLE_", "AZURE_", "WARCHEST_REMOTE_")


def main(spark, index_dir, prefix, where, env=None):
    if env is None:
        env = {k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIXES)}
    selection = spark.read.parquet(index_dir).where(where)
    return pyspark_warchest.fetch(
        selection,
        prefix=prefix,
        columns=[
            "warc_filename",
            "warc_record_offset",
            "warc_target_uri",
            "http_status",
            "http_content_type",
            "payload",
            "error",
        ],
        env=env,
    )


if __name__ == "__main__":
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName("cc-index-fetch").getOrCreate()
    records = main(spark, sys.argv[1], sys.argv[2], sys.argv[3])
    if len(sys.argv) > 4:
        records.write.mode("overwrite").parquet(sys.argv[4])
    else:
        records.select("warc_target_uri", "http_status", "error").show(20, truncate=80)
