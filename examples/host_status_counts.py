"""Counts of responses by host and HTTP status (cc-pyspark's server count,
with the warc data source and no Python object per record).

    python examples/host_status_counts.py crawl/*.warc.gz
"""

import sys

from pyspark.sql import functions as F


def main(spark, paths):
    df = (
        spark.read.format("warc")
        .option("recordTypes", "response")
        .option("columns", "warc_target_uri,http_status")
        .load(paths)
    )
    host = F.lower(F.expr("parse_url(warc_target_uri, 'HOST')"))
    return df.groupBy(host.alias("host"), "http_status").count().orderBy(F.desc("count"), "host")


if __name__ == "__main__":
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName("host-status-counts").getOrCreate()
    main(spark, sys.argv[1:]).show(50, truncate=False)
