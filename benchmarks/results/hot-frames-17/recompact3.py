"""recompact3.py STORE VARIANT: rewrite every table file of STORE (a copy) into the last level with
the store's options plus VARIANT: n (none), p (partitioned index and filters), h (optimize_filters_for_hits)."""
import sys, time
from rocksdict import Rdict, Cache, CompactOptions, BottommostLevelCompaction, BlockBasedOptions, BlockBasedIndexType, DBCompressionType
from cortex.storage import rocksdb as r
path, variant = sys.argv[1], sys.argv[2]
cache = Cache(64 << 20)
opts = r._options(cache, create=False)
if variant == "p":
    table = BlockBasedOptions()
    table.set_bloom_filter(10, False)
    table.set_block_cache(cache)
    table.set_cache_index_and_filter_blocks(True)
    table.set_index_type(BlockBasedIndexType.two_level_index_search())
    table.set_partition_filters(True)
    table.set_metadata_block_size(4096)
    table.set_pin_top_level_index_and_filter(True)
    opts.set_block_based_table_factory(table)
elif variant == "h":
    opts.set_optimize_filters_for_hits(True)
db = Rdict(path, opts, column_families={"default": opts})
co = CompactOptions(); co.set_bottommost_level_compaction(BottommostLevelCompaction.force())
t = time.perf_counter(); db.compact_range(None, None, co); print(variant, "compacted in", round(time.perf_counter() - t, 1), "s")
print(db.property_value("rocksdb.levelstats")); db.close()
