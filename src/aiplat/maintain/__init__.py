"""Rolling node maintenance (issue #42): a change decided as a plan before anything runs.

``plan`` is pure (the spec and the resolved pool in, the batches and each node's steps out);
``state`` is the run as a pure state machine (each node's phase, the resume point, the
lease); ``run`` executes the plan on a cluster (cordon, Eviction-API drain, the owner's
apply, the health gate, rollback), saving the state after every step.
"""
