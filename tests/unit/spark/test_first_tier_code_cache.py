"""A JVM held to the JIT's first tier reserves 48 MB for compiled code, not the tiered
240 MB; a Spark pipeline's generated code filled that in 95 s, the JIT stopped and a
method handle failed to link, killing the executor. Wherever the lab or a built-in asks
for the first tier, it asks for the tiered code cache too."""

from brownout.common.java import JIT_FIRST_TIER
from brownout.scenarios import builtin, builtin_names
from brownout.spark.session import SHORT_JOB_CONF

FIRST_TIER = "-XX:TieredStopAtLevel=1"
CODE_CACHE = "-XX:ReservedCodeCacheSize="


def keeps_code_cache(options: str) -> bool:
    words = options.split()
    return FIRST_TIER not in words or any(w.startswith(CODE_CACHE) for w in words)


def test_the_lab_first_tier_keeps_the_code_cache():
    assert FIRST_TIER in JIT_FIRST_TIER
    assert keeps_code_cache(" ".join(JIT_FIRST_TIER))
    assert all(keeps_code_cache(v) for v in SHORT_JOB_CONF.values())


def test_every_built_in_pipeline_on_the_first_tier_keeps_the_code_cache():
    options = {(name, key): value
               for name in builtin_names()
               for key, value in builtin(name).pipeline_config.items()
               if key.endswith("extraJavaOptions")}
    assert any(FIRST_TIER in v for v in options.values())  # the spark-* built-ins do
    assert [k for k, v in options.items() if not keeps_code_cache(v)] == []


def test_a_first_tier_without_the_code_cache_is_caught():
    assert not keeps_code_cache(FIRST_TIER)
    assert keeps_code_cache("-Xmx1g")
