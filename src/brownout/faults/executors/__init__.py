"""The executors of the fault kinds (faults.kinds), one per family: process (signals,
stops and starts), network (grudges and qdiscs in the lab's namespaces) and storage (a
node's log dir). Each kind's method takes (fault, target ids, details to fill) and
returns the result's message, or raises faults.fault.Failed / Indeterminate."""
