"""The one C extension (src/brownout/protocol/_scan.c, the walk over a produced batch's
records); everything else about the package is in pyproject.toml. Optional: without a
C compiler the install goes on and the node walks records in Python."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("brownout.protocol._scan", ["src/brownout/protocol/_scan.c"],
                             optional=True)])
