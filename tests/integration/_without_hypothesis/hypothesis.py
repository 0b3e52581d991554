"""Stands in for hypothesis in the processes the integration tests start (see conftest's
`_lab_processes_without_hypothesis`): kio imports hypothesis when it can and then hooks
every schema class for it, which costs each node and `brownout` command about a quarter
of a second of CPU. A real installation has no hypothesis (it is a dev dependency)."""

raise ImportError("hypothesis is hidden from the lab processes the tests start")
