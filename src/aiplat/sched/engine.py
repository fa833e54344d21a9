"""The discrete-event simulator: Kueue admission on top of node placement and pool strategies.

One heapq of timed events (arrival, finish, node up/down, scale-down check, pods-ready
timeout, requeue after backoff) drives a :class:`~aiplat.sched.cluster.ClusterState`. After
the events of one instant, admission cycles run until nothing more is admitted
(:mod:`aiplat.sched.admission` holds Kueue's ordering and preemption rules). Deterministic:
events at the same time run in insertion order, and every random draw comes from one
generator seeded by the caller.

What happens to a job: it arrives in its ClusterQueue; an admission cycle assigns a flavor
(pool) and reserves quota (evicting victims if it preempts); its pods are then placed on the
pool's nodes all at once (gang) by the placement policy, or by topology-aware placement when a
pod set asks for it — TAS placement is part of admission, as in Kueue. Without TAS, Kueue
admits on quota alone, so an admitted job whose pods find no room waits for capacity (an
autoscaled pool starts nodes for it); with ``waitForPodsReady`` it is evicted after the
timeout and requeued with exponential backoff. A job runs ``duration`` seconds once all its
pods run; an evicted job (preemption, node failure, timeout) loses its progress.

Pool strategies (:class:`PoolStrategy`): fixed pools; autoscaling (min, max = the pool's
nodes, start-up delay, scale-down after idle); a warm reserve of idle nodes kept up; node
failures with exponential MTBF/MTTR. Provisioned GPU-hours count every node that is up or
starting, idle included, so cost and waits are compared side by side.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from aiplat.sched.admission import Admission
from aiplat.sched.cluster import MILLI, ClusterState, Node, Placement
from aiplat.sched.frag import FragMeter, TypicalWorkload
from aiplat.sched.kueue import KueueConfig
from aiplat.sched.metrics import JobRecord, SimResult, TimePoint, Totals, summarize
from aiplat.sched.policies import GpuClustering, Policy, make_policy
from aiplat.sched.tas import plan_podset
from aiplat.sched.workload import Job, Run

_Run = Run  # the engine's name for it before the move


@dataclass(frozen=True)
class PoolStrategy:
    """How one pool's nodes come and go. Without autoscaling every node is always there."""

    autoscaling: bool = False
    min_nodes: int = 0
    startup_s: float = 600.0
    scale_down_idle_s: float = 600.0
    warm_nodes: int = 0
    mtbf_h: float | None = None
    mttr_h: float = 24.0


ARRIVE, FINISH, NODE_UP, NODE_DOWN, REPAIR, IDLE_CHECK, READY_TIMEOUT, REQUEUE, STOPPED = range(9)
# A preempted job's pods stop within Kubernetes' default grace period; Kueue holds the
# victim's quota (and its preemptor waits) until then.
EVICTION_S = 30.0


class Simulator:
    def __init__(self, nodes: Sequence[Node], jobs: Sequence[Job], config: KueueConfig, *,
                 policy: str = "bestfit", strategies: dict[str, PoolStrategy] | None = None,
                 seed: int = 0, samples: int = 100, typical: TypicalWorkload | None = None,
                 horizon: float | None = None) -> None:
        self.state = ClusterState(list(nodes))
        self.config = config
        self.strategies = strategies or {}
        self.rng = np.random.default_rng(seed)
        reqs = [p.request for j in jobs for p in j.podsets]
        self.typical = typical or (TypicalWorkload.from_requests(reqs) if reqs else None)
        self.policy: Policy = make_policy(policy, self.typical)
        by_pool: dict[str, list[int]] = {}
        for i, n in enumerate(self.state.nodes):
            by_pool.setdefault(n.pool, []).append(i)
        self.pool_nodes = {k: np.array(v, dtype=np.int64) for k, v in by_pool.items()}
        self._pool_mask = {k: np.isin(np.arange(len(self.state)), v) for k, v in by_pool.items()}
        self._whole_pool = {k: bool(m.all()) for k, m in self._pool_mask.items()}
        self.runs = {j.name: _Run(j) for j in jobs}
        self._ever_fits: dict[tuple[object, ...], bool] = {}  # (queue, pin, requests)
        if len(self.runs) != len(jobs):
            raise ValueError("job names must be unique")
        self.adm = Admission(config, self)
        self.events: list[tuple[float, int, int, str, int]] = []
        self._seq = 0
        self.now = 0.0
        self.starting: dict[int, float] = {}
        self.idle_since: dict[int, float] = {}
        self.pending_pods: list[str] = []  # admitted, pods not yet placed (FIFO)
        self.backing_off = 0  # pending runs waiting out a requeue backoff (not queued)
        self._freed = False  # capacity appeared since the last placement pass
        self._new_pending = False
        self.on_node: dict[int, set[str]] = {}
        self.samples = samples
        # Without a horizon the run ends when no event is left; node failures never stop, so
        # they need one (default: twice the last submission plus the longest job).
        last = max((j.submit for j in jobs), default=0.0)
        longest = max((j.duration for j in jobs), default=0.0)
        fails = any(s.mtbf_h for s in self.strategies.values())
        self.horizon = horizon if horizon is not None else (
            2 * (last + longest) + 1.0 if fails else math.inf)
        total_gpus = max(1.0, float(self.state.gpu_count.sum()))
        work = sum(j.gpus * j.duration for j in jobs) / total_gpus
        self.estimate = min(self.horizon, last + work + longest + 1.0)
        self.timeline: list[TimePoint] = []
        self.preemptions = 0
        self.events_processed = 0
        self._acc_t = 0.0
        self.provisioned_gpu_s = 0.0
        self.allocated_gpu_s = 0.0
        for pool, idx in self.pool_nodes.items():
            strat = self.strategies.get(pool)
            if strat is not None and strat.autoscaling:
                keep = min(len(idx), strat.min_nodes + strat.warm_nodes)
                for n in idx[keep:]:
                    self.state.set_up(int(n), False)
            if strat is not None and strat.mtbf_h:
                for n in idx:
                    self._push(self.rng.exponential(strat.mtbf_h * 3600), NODE_DOWN, "", int(n))
        for j in jobs:
            self._push(j.submit, ARRIVE, j.name)

    # ------------------------------------------------------------------ plumbing

    def _push(self, t: float, kind: int, name: str = "", arg: int = 0) -> None:
        heapq.heappush(self.events, (t, self._seq, kind, name, arg))
        self._seq += 1

    def _accumulate(self, t: float) -> None:
        dt = t - self._acc_t
        if dt > 0:
            up_gpus = self.state.up_gpus
            if self.starting:
                up_gpus += sum(int(self.state.gpu_count[n]) for n in self.starting)
            self.provisioned_gpu_s += dt * up_gpus
            self.allocated_gpu_s += dt * self.state.allocated_gpu_milli() / MILLI
            self._acc_t = t

    def run(self, progress: Callable[[float], None] | None = None) -> SimResult:
        step = self.estimate / self.samples if self.samples else math.inf
        next_sample = 0.0
        cut = False  # work is left past the horizon: the run ends at the horizon
        while self.events:
            t = self.events[0][0]
            if t > self.horizon:
                cut = True
                break
            while next_sample < t:  # a sample shows the state after the events of its time
                self._accumulate(next_sample)
                self._sample(next_sample)
                next_sample += step
            self._accumulate(t)
            self.now = t
            while self.events and self.events[0][0] == t:
                _, _, kind, name, arg = heapq.heappop(self.events)
                self._handle(kind, name, arg)
                self.events_processed += 1
            self.adm.decide()
            self._place_pending()
            self._pool_upkeep()
            if progress is not None:
                progress(min(1.0, t / self.estimate))
        # Cut at the horizon, the jobs still running ran until it (a 30-day job starting in
        # the month's last weeks counts its hours); else the last event ends the run.
        end = self.horizon if cut else min(self.horizon, max(self.now, 0.0))
        while next_sample <= end:
            self._accumulate(next_sample)
            self._sample(next_sample)
            next_sample += step
        self._accumulate(end)
        return summarize(Totals(
            list(self.runs.values()), self.config.weights,
            self.timeline, self.preemptions, self.allocated_gpu_s, self.provisioned_gpu_s,
            self.events_processed), end)

    def _sample(self, t: float) -> None:
        st = self.state
        frag = 0.0
        if self.typical is not None and st.total_gpu_milli:
            frag = FragMeter(self.typical, st).cluster(st) / MILLI
        # the runs pending at t: the workloads in their queues and those backing off
        pending = self.adm.waiting() + self.backing_off
        self.timeline.append(TimePoint(
            t=t,
            allocated_gpus=st.allocated_gpu_milli() / MILLI,
            provisioned_gpus=(st.up_gpus + sum(int(st.gpu_count[n]) for n in self.starting)),
            pending=pending,
            fragmented_gpus=frag,
        ))

    # ------------------------------------------------------------------ events

    def _handle(self, kind: int, name: str, arg: int) -> None:  # noqa: C901 (one branch per kind)
        if kind == ARRIVE:
            run = self.runs[name]
            if not self._can_ever_fit(run.job):
                run.state = "never-fits"
                return
            self.adm.arrive(run)
        elif kind == FINISH:
            run = self.runs[name]
            if run.state == "running" and run.epoch == arg:
                run.finished_at = self.now
                run.spans[-1] = (run.spans[-1][0], self.now)
                self._release(run)
                run.state = "finished"
        elif kind == NODE_UP:
            if arg in self.starting:
                del self.starting[arg]
                self.state.set_up(arg, True)
                self._freed = True
                self.idle_since[arg] = self.now
                self._idle_check_later(arg)
                self.adm.capacity_changed(self.state.nodes[arg].pool)
        elif kind == NODE_DOWN:
            self._fail(arg)
        elif kind == REPAIR:
            self.state.set_up(arg, True)
            self._freed = True
            self.idle_since[arg] = self.now
            strat = self.strategies.get(self.state.nodes[arg].pool)
            if strat is not None and strat.mtbf_h:
                self._push(self.now + self.rng.exponential(strat.mtbf_h * 3600), NODE_DOWN, "", arg)
            self.adm.capacity_changed(self.state.nodes[arg].pool)
        elif kind == IDLE_CHECK:
            self._scale_down(arg)
        elif kind == READY_TIMEOUT:
            run = self.runs[name]
            if run.state == "admitted" and run.epoch == arg:
                self.evict(run, reason="timeout")
        elif kind == STOPPED:
            self.adm.evicted(name, self.runs[name].epoch == arg)
        elif kind == REQUEUE:
            run = self.runs[name]
            if run.state == "pending" and run.epoch == arg:
                self.backing_off -= 1
                self.adm.arrive(run)

    def _can_ever_fit(self, job: Job) -> bool:
        """Would the job's pods fit some flavor's pool if it were empty? (Capacities do not
        change: asked once per queue, pin and requests.)"""
        flavors = self.adm.flavors(job.queue)
        key = (job.queue, job.pool, tuple(p.request for p in job.podsets))
        got = self._ever_fits.get(key)
        if got is None:
            got = self._ever_fits[key] = self._fits_empty(job, flavors)
        return got

    def _fits_empty(self, job: Job, flavors: list[str]) -> bool:
        for fq in flavors:
            if job.pool is not None and fq != job.pool:
                continue
            idx = self.pool_nodes.get(fq, np.zeros(0, dtype=np.int64))
            if not len(idx):
                continue
            st = self.state
            ok = True
            for p in job.podsets:
                r = p.request
                fit = (st.cpu_cap[idx] >= r.cpu_milli) & (st.mem_cap[idx] >= r.memory_mib)
                if r.num_gpu:
                    fit &= st.model_ok(r.gpu_models)[idx] & (st.gpu_count[idx] >= r.num_gpu)
                if not fit.any():
                    ok = False
            if ok:
                return True
        return False

    # ------------------------------------------------------------------ placement

    def try_place(self, run: _Run, *, dry: bool = False) -> bool:
        """Place every pod of the job on its flavor's pool, all or nothing (``dry``: only
        say whether it would, leaving the state as it was)."""
        st = self.state
        pools = run.pools or [run.flavor] * len(run.job.podsets)
        if any(p not in self.pool_nodes for p in pools):
            return False
        done: list[tuple[int, Placement]] = []
        ok = True
        saved = st.up
        try:
            for pi, ps in enumerate(run.job.podsets):
                idx = self.pool_nodes[pools[pi]]
                st.up = saved if self._whole_pool[pools[pi]] else saved & self._pool_mask[pools[pi]]
                if ps.topology is not None:
                    plan = plan_podset(st, ps, idx)
                    if plan is None:
                        ok = False
                        break
                    for node, pods in plan:
                        for _ in range(pods):
                            where = Placement(node, st.default_gpus(node, ps.request))
                            st.allocate(ps.request, where)
                            done.append((pi, where))
                    continue
                for _ in range(ps.count):
                    where2 = self.policy.place(st, ps.request, self.rng)
                    if where2 is None:
                        ok = False
                        break
                    st.allocate(ps.request, where2)
                    done.append((pi, where2))
                if not ok:
                    break
        finally:
            st.up = saved
        if not ok or dry:
            for pi, where in reversed(done):
                st.release(run.job.podsets[pi].request, where)
            return ok
        run.placements = done
        for pi, where in done:
            if isinstance(self.policy, GpuClustering):
                self.policy.placed(st, run.job.podsets[pi].request, where)
            self.on_node.setdefault(where.node, set()).add(run.job.name)
            self.idle_since.pop(where.node, None)
        return True

    def fits_without(self, run: _Run, victims: list[_Run]) -> bool:
        """Would ``run``'s pods be placed if ``victims`` stopped? (state unchanged after)"""
        st = self.state
        gone = [(v.job.podsets[pi].request, where) for v in victims
                for pi, where in v.placements]
        for req, where in gone:
            st.release(req, where)
        try:
            placed = self.try_place(run, dry=True)
        finally:
            for req, where in gone:
                st.allocate(req, where)
        return placed

    def stop_later(self, run: _Run) -> None:
        """A preemption victim: its pods stop ``EVICTION_S`` from now."""
        self._push(self.now + EVICTION_S, STOPPED, run.job.name, run.epoch)

    def start(self, run: _Run) -> None:
        run.state = "running"
        run.started_at = self.now
        run.spans.append((self.now, None))
        if run.first_start is None:
            run.first_start = self.now
        self._push(self.now + run.job.duration, FINISH, run.job.name, run.epoch)

    def admitted(self, run: _Run) -> None:
        """Quota is reserved: place now, or wait for capacity (and start nodes)."""
        run.state = "admitted"
        run.admitted_at = self.now
        if self.try_place(run):
            self.start(run)
            return
        self.pending_pods.append(run.job.name)
        self._new_pending = True
        wfpr = self.config.wait_for_pods_ready
        if wfpr is not None:
            self._push(self.now + wfpr.timeout_s, READY_TIMEOUT, run.job.name, run.epoch)

    def _place_pending(self) -> None:
        """Retry admitted jobs whose pods wait, in admission order, when capacity appeared
        (a job of the same shape that failed in this pass makes the others wait too)."""
        if not self._freed and not self._new_pending:
            return
        self._freed = self._new_pending = False
        still = []
        failed: set[tuple[object, ...]] = set()
        for name in self.pending_pods:
            run = self.runs[name]
            if run.state != "admitted":
                continue
            key = (run.job.podsets, tuple(run.pools))
            if key not in failed and self.try_place(run):
                self.start(run)
            else:
                failed.add(key)
                still.append(name)
        self.pending_pods = still

    def _release(self, run: _Run) -> None:
        self._freed = True
        for pi, where in run.placements:
            req = run.job.podsets[pi].request
            self.state.release(req, where)
            if isinstance(self.policy, GpuClustering):
                self.policy.released(self.state, req, where)
            names = self.on_node.get(where.node)
            if names is not None:
                names.discard(run.job.name)
                if not names:
                    self.idle_since[where.node] = self.now
                    self._idle_check_later(where.node)
        run.placements = []
        self.adm.release(run)

    def evict(self, run: _Run, reason: str) -> None:
        """Stop a running or admitted job and put it back in its queue."""
        if run.state == "running" and run.started_at is not None:
            run.wasted_gpu_s += (self.now - run.started_at) * run.job.gpus
            run.spans[-1] = (run.spans[-1][0], self.now)
        if run.state in ("running", "admitted"):
            self._release(run)
        run.state = "pending"
        run.epoch += 1
        run.evictions += 1
        run.started_at = None
        if reason == "preempted":
            run.preempted_times.append(self.now)
            run.preempted += 1
            self.preemptions += 1
            self.adm.arrive(run)
        elif reason == "timeout":
            wfpr = self.config.wait_for_pods_ready
            assert wfpr is not None
            run.attempts += 1
            if wfpr.backoff_limit is not None and run.attempts > wfpr.backoff_limit:
                run.state = "deactivated"
                return
            delay = min(wfpr.backoff_base_s * 2 ** (run.attempts - 1), wfpr.backoff_max_s)
            self.backing_off += 1
            self._push(self.now + delay, REQUEUE, run.job.name, run.epoch)
        else:  # node failure: requeue at once
            self.adm.arrive(run)

    # ------------------------------------------------------------------ pools

    def _fail(self, node: int) -> None:
        if not self.state.up[node]:
            strat = self.strategies.get(self.state.nodes[node].pool)
            if strat is not None and strat.mtbf_h:  # down for scaling: try again later
                self._push(self.now + self.rng.exponential(strat.mtbf_h * 3600),
                           NODE_DOWN, "", node)
            return
        for name in sorted(self.on_node.get(node, set())):
            self.evict(self.runs[name], reason="failure")
        self.state.set_up(node, False)
        self.idle_since.pop(node, None)
        strat = self.strategies.get(self.state.nodes[node].pool)
        mttr = strat.mttr_h if strat is not None else 24.0
        self._push(self.now + self.rng.exponential(mttr * 3600), REPAIR, "", node)

    def _idle_check_later(self, node: int) -> None:
        strat = self.strategies.get(self.state.nodes[node].pool)
        if strat is not None and strat.autoscaling:
            self._push(self.now + strat.scale_down_idle_s, IDLE_CHECK, "", node)

    def _scale_down(self, node: int) -> None:
        pool = self.state.nodes[node].pool
        strat = self.strategies.get(pool)
        since = self.idle_since.get(node)
        if strat is None or since is None or not self.state.up[node]:
            return
        if self.now - since < strat.scale_down_idle_s - 1e-9:
            return
        idx = self.pool_nodes[pool]
        up = int(self.state.up[idx].sum())
        idle_up = sum(1 for n in idx if self.state.up[n] and int(n) in self.idle_since)
        if up - 1 < strat.min_nodes or idle_up - 1 < strat.warm_nodes:
            return
        self.state.set_up(node, False)
        del self.idle_since[node]

    def _pool_upkeep(self) -> None:
        """Autoscaled pools: start nodes for admitted jobs that wait, keep the warm reserve."""
        for pool, strat in self.strategies.items():
            if not strat.autoscaling or pool not in self.pool_nodes:
                continue
            idx = self.pool_nodes[pool]
            per_node = max(1, int(self.state.gpu_count[idx].max()))
            waiting = sum(self.runs[n].job.gpus for n in self.pending_pods
                          if self.runs[n].flavor == pool and self.runs[n].state == "admitted")
            starting = [n for n in self.starting if self.state.nodes[n].pool == pool]
            want = math.ceil(waiting / per_node) - len(starting)
            idle_up = sum(1 for n in idx if self.state.up[n] and int(n) in self.idle_since)
            want = max(want, strat.warm_nodes - idle_up - max(0, len(starting) - want))
            if want <= 0:
                continue
            down = [int(n) for n in idx if not self.state.up[n] and int(n) not in self.starting]
            for n in down[:want]:
                self.starting[n] = self.now
                self._push(self.now + strat.startup_s, NODE_UP, "", n)


def simulate(nodes: Sequence[Node], jobs: Sequence[Job], config: KueueConfig, *,
             policy: str = "bestfit", strategies: dict[str, PoolStrategy] | None = None,
             seed: int = 0, samples: int = 100, horizon: float | None = None,
             progress: Callable[[float], None] | None = None) -> SimResult:
    """Run one simulation to the end (or ``horizon`` seconds) and summarise it."""
    sim = Simulator(nodes, jobs, config, policy=policy, strategies=strategies, seed=seed,
                    samples=samples, horizon=horizon)
    return sim.run(progress)


__all__ = ["JobRecord", "PoolStrategy", "SimResult", "Simulator", "simulate"]
