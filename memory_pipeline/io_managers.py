"""Polars frames as one parquet file per daily partition.

A single-run backfill hands an asset a whole range of days and gets back one
frame; this IO manager splits it by its `partition` column and concatenates the
requested days when a downstream asset loads. Days without rows get no file (a
range over a quiet year would otherwise write hundreds of empty ones): Dagster
only loads partitions it saw materialised, so a missing file there is an empty day.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
from dagster import ConfigurableIOManager, InputContext, MetadataValue, OutputContext


class PolarsParquetIOManager(ConfigurableIOManager):
    base_dir: str

    def _path(self, context: InputContext | OutputContext, key: str) -> Path:
        return Path(self.base_dir, *context.asset_key.path, f"{key}.parquet")

    def handle_output(self, context: OutputContext, obj: pl.DataFrame) -> None:
        keys = context.asset_partition_keys if context.has_asset_partitions else ["all"]
        parts = obj.partition_by("partition", as_dict=True) if context.has_asset_partitions else {("all",): obj}
        self._path(context, "_schema").parent.mkdir(parents=True, exist_ok=True)
        for key in keys:
            path = self._path(context, key)
            part = parts.get((key,))
            if part is None:
                path.unlink(missing_ok=True)  # an earlier run's rows for this day are gone now
                continue
            tmp = path.with_suffix(".tmp")
            part.write_parquet(tmp)
            tmp.replace(path)
        obj.clear().write_parquet(self._path(context, "_schema"))
        context.add_output_metadata(
            {"rows": obj.height, "folder": MetadataValue.path(str(self._path(context, "x").parent))}
        )

    def load_input(self, context: InputContext) -> pl.DataFrame:
        keys = context.asset_partition_keys if context.has_asset_partitions else ["all"]
        paths = [p for p in (self._path(context, key) for key in keys) if p.exists()]
        if not paths:
            # Every day empty: the frame's shape comes from the schema file written with the output.
            return pl.read_parquet(self._path(context, "_schema"))
        return pl.concat([pl.read_parquet(p) for p in paths], how="vertical_relaxed")
