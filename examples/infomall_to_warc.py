"""Converts a directory of Web InfoMall (Tianwang) files to WARC, one Spark
task per file, each output a gzipped WARC named after its input.

    python examples/infomall_to_warc.py INPUT_DIR OUTPUT_DIR
"""

import os
import sys

import warchest


def convert_one(path, output_dir):
    out = os.path.join(output_dir, os.path.basename(path) + ".warc.gz")
    report = warchest.convert(path, out)
    return (path, out, report["records_read"], report["records_written"])


def main(spark, input_dir, output_dir):
    os.makedirs(output_dir, exist_ok=True)
    files = sorted(
        os.path.join(input_dir, n)
        for n in os.listdir(input_dir)
        if not n.startswith((".", "_")) and os.path.isfile(os.path.join(input_dir, n))
    )
    sc = spark.sparkContext
    done = sc.parallelize(files, max(1, len(files))).map(lambda p: convert_one(p, output_dir))
    return spark.createDataFrame(done, "input string, output string, records_read long, records_written long")


if __name__ == "__main__":
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName("infomall-to-warc").getOrCreate()
    main(spark, sys.argv[1], sys.argv[2]).show(truncate=False)
