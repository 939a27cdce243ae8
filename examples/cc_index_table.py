"""Common Crawl's cc-index Parquet table of a set of WARCs, built in parallel.

Each Spark task indexes its WARC with warchest (SURT keys, the cc-index
columns, zstd Parquet sorted by url_surtkey) into one Parquet file of the
output directory; Spark, Athena, DuckDB or pyarrow then read the directory
as one table.

    python examples/cc_index_table.py OUTPUT_DIR crawl/*.warc.gz
"""

import os
import sys

import warchest


def index_one(path, output_dir):
    name = os.path.basename(path)
    out = os.path.join(output_dir, f"{name}.parquet")
    # Common Crawl's table keeps offsets in 32-bit integers.
    warchest.index(path, out, format="parquet", int32_offsets=True)
    return out


def main(spark, output_dir, paths):
    os.makedirs(output_dir, exist_ok=True)
    sc = spark.sparkContext
    sc.parallelize(paths, len(paths)).map(lambda p: index_one(p, output_dir)).collect()
    return spark.read.parquet(output_dir)


if __name__ == "__main__":
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName("cc-index-table").getOrCreate()
    table = main(spark, sys.argv[1], sys.argv[2:])
    table.groupBy("fetch_status").count().orderBy("fetch_status").show()
