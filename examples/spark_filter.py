"""The Spark pattern from docs/distributed.md, runnable on a local session (needs pyspark + Java).

    PYSPARK_PYTHON=$(which python) python examples/spark_filter.py

Builds a filter of the distinct values of a string column (set semantics: add_unique_many per
partition, merged with the set union |) with mapInArrow (one full-size filter per partition,
merged with treeReduce) and with the RDD API (treeReduce(operator.or_) on Filter objects, which pickle as
their bytes), checks both equal a filter built locally, then marks rows with a broadcast filter.
Not part of the test suite: pyspark is a ~456 MB download.
"""

from __future__ import annotations

import operator
import os
import sys

import numpy as np
import pandas as pd
import pyarrow as pa

import cuckoo


def main() -> int:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # Spark's Python workers need cuckoo
    from pyspark.sql import SparkSession
    from pyspark.sql.types import BooleanType, StructField, StructType

    spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    keys = np.arange(100_000, dtype=np.int64) * 7919
    pdf = pd.DataFrame({"user_id": [f"u{k}" for k in keys], "n": keys})
    df = spark.createDataFrame(pdf).repartition(4)
    n = df.count()  # one pass: every partition filter gets this capacity, so merges are exact
    params = dict(capacity=max(n, 1), fpr=0.001, seed=0)
    local = cuckoo.Filter(**params)
    local.add_unique_many(pdf["user_id"])

    def build_partition(batches):
        f = cuckoo.Filter(**params)
        for batch in batches:
            f.add_unique_many(batch.column("user_id"))  # Arrow strings, zero-copy
        yield pa.RecordBatch.from_pydict({"filter": [f.to_bytes()]})

    blobs = df.select("user_id").mapInArrow(build_partition, "filter binary").rdd.map(lambda row: bytes(row.filter))
    merged = cuckoo.Filter.from_bytes(
        blobs.treeReduce(lambda a, b: (cuckoo.Filter.from_bytes(a) | cuckoo.Filter.from_bytes(b)).to_bytes())
    )
    print("mapInArrow build == local:", merged == local)

    def build_rows(rows):
        f = cuckoo.Filter(**params)
        f.add_unique_many([r.user_id for r in rows])
        return [f]

    rdd_merged = df.rdd.mapPartitions(build_rows).treeReduce(operator.or_)
    print("RDD treeReduce(or_) build == local:", rdd_merged == local)

    bf = spark.sparkContext.broadcast(merged.to_bytes())

    def mark(batches):
        f = cuckoo.Filter.from_bytes(bf.value)
        for batch in batches:
            yield batch.append_column("seen", pa.array(f.contains_many(batch.column("user_id"))))

    schema = StructType(df.schema.fields + [StructField("seen", BooleanType())])
    all_seen = df.mapInArrow(mark, schema).filter("seen").count() == n
    print("broadcast lookup marks every key:", all_seen)
    spark.stop()
    return 0 if merged == local and rdd_merged == local and all_seen else 1


if __name__ == "__main__":
    sys.exit(main())
