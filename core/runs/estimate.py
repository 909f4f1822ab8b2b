"""Time estimates from this machine's history: for a grid before it launches, and for a run while it runs.

A run's wall time is mostly not its optimizer steps: a frozen GAN-BERT run of 60 steps spends most of its time
loading the backbone and the cached features, and evaluating. So an estimate starts from what finished runs took
here, from start to end less their encoding pass (encoding happens once per text and is counted apart, at the
speed this machine measured):

1. runs with the same settings but the seed: the median of their times;
2. else runs of the same method, mode and max length (any max length when frozen: it changes only the
   encoding): their times scaled by the method's own model of its budget at this data size against theirs;
3. else a rough guess: the method's model at laptop-CPU speeds plus a run's fixed cost, and the page says so.

A grid's runs follow one another in one worker process (`core.runs.worker`), so the process's start (torch
and transformers imported) is counted once a grid, at the time it took here; a walk's 4 frozen runs estimated at
3 min took 4.9 s when each run paid it. Both models count the gradient checkpointing that slows a step whose
memory would not fit: a finished run's as it recorded it, a new run's as its worker will decide it on this machine
now."""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from core.backbone import resolve_backbone
from core.backbone.packaged import PACKAGED, converts, is_converted
from core.backbone.token_count import tokens_per_text
from core.calibration import measured
from core.data import clean_texts
from core.runs.encoding_speed import tokens_per_second
from core.runs.lifecycle import ACTIVE, Status
from core.runs.planned import planned_rows, texts_to_encode
from core.runs.registry import Registry, Run
from core.runs.states_estimate import states_seconds
from core.train import TrainConfig, method_for
from core.train.config import flat_settings
from core.train.feature_store import both_store, cached_share, feature_store

STARTUP = measured("worker_startup")  # s for a worker to start and import torch, before one was timed here
RUN_OVERHEAD = measured("run_overhead")  # s a run spends beyond its method's model (data, features, folder)
BUSY = 0.75  # of the cores busy over the last minute, with no run of the studio's going: other work slows a grid
NOT_THE_RUN = ("seed", "tags", "device")  # settings that leave a run's time as it is
ROWS = ("labeled", "unlabeled", "val_rows", "test_rows")  # a run's data, as the methods' time models take it
EARLY = 1 / 3  # of a run's steps, before which its pace alone does not say its time left
# s of a phase after which its pace is trusted whatever its share of steps: a walk's run, 10 of 150 steps in 12
# min, had read its launch estimate (1 h 12 min) where its pace said 2.3 h more
PACE_TRUSTED = 180.0


def roughly(seconds: float) -> str:
    """An estimate in words: 'under a minute', 'about 7 min', 'about 2 h 05 min'."""
    if seconds < 60:
        return "under a minute"
    minutes = round(seconds / 60)
    return f"about {minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"about {minutes} min"


def checkpoints(config: TrainConfig) -> bool:
    """Whether a run of `config` started here now would checkpoint its encoder's gradients, as its worker will
    decide from the memory free then (`core.train.memory`)."""
    sequences = method_for(config).step_sequences(config)
    if sequences is None:
        return False
    # Imported here, for a run still to come: listing and comparing finished runs must not wait for torch.
    from transformers import AutoConfig, PretrainedConfig

    from core.backbone.device import pick_device
    from core.train.memory import would_checkpoint

    # the backbone's shape from its config file alone (0.5 ms), before any weights load; a GGUF one's entry (its
    # config is there only once converted)
    shape = (PretrainedConfig(**PACKAGED[config.backbone].shape) if converts(config.backbone)
             else AutoConfig.from_pretrained(str(resolve_backbone(config.backbone, config.revision, home=None).folder),
                                             local_files_only=True))
    return would_checkpoint(shape, sequences, config.max_len, pick_device(config.device))


def run_seconds(config: TrainConfig, rows: tuple[int, ...]) -> float:
    """The method's own model of its budget on these rows (`ROWS`), at laptop-CPU speeds, with the gradient
    checkpointing a run started here now would turn on."""
    return method_for(config).seconds(config, *rows, checkpoints(config))


def train_seconds(run: Run) -> float | None:
    """What a finished run took outside its encoding pass and its process's start (`startup_seconds`): by its own
    clock (its metrics' `seconds`), else from its start to its end. A run the benches restore from their records
    starts and ends within a millisecond, which read a 500-step GAN-BERT run on L2R as "under a minute"."""
    if run.status != Status.DONE or not run.started or not run.ended:
        return None
    metrics = run.metrics or {}
    took = metrics["seconds"] if metrics.get("seconds") is not None else run.ended - run.started
    return max(0.0, took - metrics.get("encode_seconds", 0.0))


def startup_seconds(runs: list[Run]) -> float:
    """How long a worker process takes here from leaving the queue to its run's start: the median over runs that
    began a process (a run chained after another starts within a second of its claim); `STARTUP` before any."""
    gaps = [r.started - r.claimed for r in runs if r.started and r.claimed and r.started - r.claimed > 1.0]
    return statistics.median(gaps) if gaps else STARTUP


def same_run(config: TrainConfig) -> str:
    return json.dumps(flat_settings(config, NOT_THE_RUN), sort_keys=True, default=str)


@dataclass(frozen=True)
class Estimate:
    seconds: float
    from_history: int  # runs whose time came from finished runs here (settings alike, or scaled)
    guessed: int  # runs with no history: laptop figures
    # each run's share by its config's JSON: its own time, the first run its worker's start, and each run of a
    # feature store the texts it adds to it; the registry keeps it, for a queued run's time left before any run
    # like it ended
    each: dict[str, float] = field(default_factory=dict)
    # the largest shares of a feature store's texts already encoded, outside the test split and in it (the same
    # when the test texts were not given); bench/speed/estimates.py replays them
    cached: float = 0.0
    cached_test: float = 0.0

    def words(self) -> str:
        """'about 7 min (from runs finished here)', or saying which part is a rough guess."""
        if not self.guessed:
            return f"{roughly(self.seconds)} (from runs finished on this machine)"
        if not self.from_history:
            return (f"{roughly(self.seconds)} (a rough guess from laptop-CPU figures: no run like these has finished "
                    "here)")
        return (f"{roughly(self.seconds)} ({self.from_history} run(s) from runs finished here, {self.guessed} a rough "
                "guess from laptop-CPU figures)")


class History:
    """The finished runs of this machine, by what decides their time."""

    def __init__(self, runs: list[Run]):
        self.done = [(r, t) for r in runs if (t := train_seconds(r)) is not None]
        self.startup = startup_seconds([r for r, _ in self.done])
        self.by_settings: dict[str, list[float]] = {}
        for r, t in self.done:
            self.by_settings.setdefault(same_run(r.config), []).append(t)

    def alike(self, config: TrainConfig) -> float | None:
        """The median time of finished runs with these settings but the seed."""
        times = self.by_settings.get(same_run(config))
        return statistics.median(times) if times else None

    def scaled(self, config: TrainConfig, rows: tuple[int, ...]) -> float | None:
        """Finished runs of the same method, mode and max length (any, when frozen), each scaled by the method's
        model of this config's budget and data (`ROWS`) against its own."""
        mine = run_seconds(config, rows) + RUN_OVERHEAD
        ratios = []
        for r, t in self.done:
            c, m = r.config, r.metrics or {}
            sizes = [m.get(k) for k in ROWS]
            # a frozen run's max length changes only its encoding, which is counted apart
            same_length = c.max_len == config.max_len or config.frozen
            # by the method's short name: GAN-BERT's control skips what G1 reads, and a control scaled from a G1 run
            # read "1m 51s" left for 17 s
            kind = (method_for(c).short(c), c.frozen) != (method_for(config).short(config), config.frozen)
            if kind or not same_length or None in sizes:
                continue  # another kind of run, or one from before runs recorded their row counts
            theirs = method_for(c).seconds(c, *sizes, bool(m.get("gradient_checkpointing")))
            ratios.append(t * mine / (theirs + RUN_OVERHEAD))
        return statistics.median(ratios) if ratios else None



def run_estimate(history: History, config: TrainConfig, rows: tuple[int, ...]) -> tuple[float, bool]:
    """One run's seconds outside encoding on these rows (`ROWS`), and whether they come from this machine's
    history."""
    found = history.alike(config) or history.scaled(config, rows)
    if found is not None:
        return found, True
    return run_seconds(config, rows) + RUN_OVERHEAD, False


def store_of(config: TrainConfig, home: Path) -> Path | tuple:
    """A frozen config's feature store; for a packaged backbone not converted here yet, a key of its own (nothing of
    it can be cached, and asking for its folder would convert it: some 25 s for an estimate)."""
    if config.backbone in PACKAGED and not is_converted(config.backbone, home):
        return (config.backbone, config.max_len, config.resolved_pooling, config.precision, config.encoder_engine)
    return feature_store(home, config.resolved_backbone(home), config.max_len, config.resolved_pooling,
                         config.precision == "bf16", config.encoder_engine)


def cached_here(config: TrainConfig, texts: Sequence[str], home: Path) -> float:
    """The share of `texts` a frozen config's feature store (or the wider store of both feature sets, which holds
    either alone) has already encoded on this machine."""
    store = store_of(config, home)
    if not texts or not isinstance(store, Path):
        return 0.0
    wider = both_store(config, home, config.precision == "bf16", config.encoder_engine)
    cleaned = clean_texts(list(texts), config.cleaning)
    return max(cached_share(s, cleaned) for s in (store, wider) if s is not None)


def grid_seconds(registry: Registry, configs: list[TrainConfig], pool: int, split: int | None, test: int,
                 classes: int, texts: Sequence[str] = (), extra: int = 0, test_texts: Sequence[str] = (),
                 cached: Callable[[TrainConfig, Sequence[str]], float] | None = None) -> Estimate:
    """The whole grid run one after another in one worker process (its start counted once), plus the encoding a frozen
    grid still needs (and a top-K grid's states, `states_seconds`): each text once (`texts_to_encode`), by the tokens
    the dataset's `texts` hold, at the speed measured here for its encoder (`encoding_speed`), less the share of those
    its feature store already holds (`cached`, by default `cached_here`; a walk's grid on features a benchmark had
    cached read "about 11 min" for 2). With the test split's texts given, its share is taken apart from the rest's:
    after a first grid the test split is all cached and the pool mostly not, and one share for both had priced a
    repeated SmolLM2 grid on L2R at 1.58x its time."""
    cached = cached or partial(cached_here, home=registry.home)
    history = History(registry.list(statuses=(Status.DONE,)))
    each, known = {c.to_json(): 0.0 for c in configs}, 0
    if configs:
        each[configs[0].to_json()] += history.startup
    for c in configs:
        seconds, measured = run_estimate(history, c, planned_rows(c, pool, split, test, classes, extra))
        each[c.to_json()] += seconds
        known += measured
    stores: dict[Path | tuple, list[TrainConfig]] = {}
    for c in configs:
        if c.frozen:
            stores.setdefault(store_of(c, registry.home), []).append(c)
    tested = set(test_texts)
    rest = [t for t in texts if t not in tested] if tested else texts
    most = (0.0, 0.0)
    for frozen in stores.values():
        # the tokens its texts hold at its max length, at the speed measured here for its encoder
        per_text = tokens_per_text(texts, frozen[0].max_len) / tokens_per_second(registry, frozen[0])
        drawn_share = cached(frozen[0], rest)
        test_share = cached(frozen[0], test_texts) if tested else drawn_share
        most = max(most, (drawn_share, test_share))
        # each run's share is what it adds to the store, in queue order: a walk's head run (its test and labeled
        # texts) had been given GAN-BERT's 11,396 pool texts too, so the queue read "about 2 min" under the form's
        # "about 1 h 13 min" once the head run's own pace took over
        before = 0.0
        for i, c in enumerate(frozen):
            upto = texts_to_encode(frozen[:i + 1], pool, split, test, classes, extra) - test
            own_test = test * (1 - test_share) if i == 0 else 0.0
            each[c.to_json()] += ((upto - before) * (1 - drawn_share) + own_test) * per_text
            before = upto
    for key, seconds in states_seconds(registry, configs, pool, split, test, classes, texts, extra).items():
        each[key] += seconds  # a top-K run's pass below its boundary, once per text
    return Estimate(sum(each.values()), known, len(configs) - known, each, *most)


def usable_cores() -> int:
    """The cores this process may run on (a container or `taskset` may allow fewer than the machine has)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def outside_work(registry: Registry, now: float, load: float | None = None, cores: int | None = None) -> str | None:
    """Why a grid may take longer than its estimate, which comes from runs as they went here: another program
    keeping the cores busy slows every step. Said only when no run of the studio's is going or ended within the
    load average's minute (the queue counts those); None when the machine is mostly idle, or cannot say."""
    if any(r.status in ACTIVE or (r.ended or 0) > now - 60 for r in registry.list(kind=None)):
        return None
    if load is None:
        try:
            load = os.getloadavg()[0]
        except (AttributeError, OSError):  # Windows has none; elsewhere it can be unreadable
            return None
    cores = cores or usable_cores()
    if load < BUSY * cores:
        return None
    return (f"Other work keeps this machine busy (load {load:.1f} on {cores} cores over the last minute): "
            "runs will take longer than estimated while it lasts.")


def times_left(runs: list[Run], history: History, now: float, slots: int) -> dict[str, float | None]:
    """Seconds until each run ends. A queued local run waits for one of this machine's `slots` (runs at once)
    as the runs ahead of it end, oldest first, then takes its own time; a walk read a queued run's own few
    seconds as its time left, sixth in the queue. Unknown (None) behind a run whose time is unknown."""
    left = {r.id: time_left(r, history, now) for r in runs}
    local = [r for r in runs if r.backend == "local"]
    ends: list[float | None] = [left[r.id] for r in local if r.status in (Status.STARTING, Status.RUNNING)]
    ends += [0.0] * max(0, slots - len(ends))
    pace = machine_pace(local, left, history, now)
    for r in sorted((r for r in local if r.status == Status.QUEUED), key=lambda r: r.created):
        known = [e for e in ends if e is not None]
        start = min(known) if len(known) == len(ends) else None  # an unknown end may free a slot first
        ends.remove(start)
        left[r.id] = None if start is None or left[r.id] is None else start + left[r.id] * pace
        ends.append(left[r.id])
    return left


def machine_pace(local: list[Run], left: dict[str, float | None], history: History, now: float) -> float:
    """How much longer than expected the runs training now will take in all (their time so far plus their time
    left, over what they were expected to take), the median of them; 1 when none is training yet. The queued
    runs' times are scaled by it: on a machine loaded by other work, a walk's queue line had kept saying the
    launch estimate while the run ahead of them took 6 times its own. A run's ratio counts as its own time left
    does (`time_left`): its weight grows as the square of the share of its first third of steps run, and is 0 while
    it encodes; the first steps' pace had swung a grid's forecast from 5 to 14 to 8 min for a grid that took 6."""
    ratios = []
    for r in local:
        expected = r.estimate or history.alike(r.config)  # the launch estimate counts the start and encoding too
        began = r.claimed or r.started
        if r.status == Status.RUNNING and r.phase_started and left[r.id] is not None and expected and began:
            weight = 0.0 if r.phase == "encoding" else min(1.0, (r.progress / EARLY) ** 2)
            ratios.append(1 + weight * ((now - began + left[r.id]) / expected - 1))
    return statistics.median(ratios) if ratios else 1.0


def time_left(run: Run, history: History, now: float) -> float | None:
    """Seconds until a run ends, not counting a queued run's wait (`times_left` adds it): queued, starting or
    preparing, its grid's estimate at launch or the runs alike (less what has passed since it left the queue,
    unknown once that is all of it: a walk read "0m 00s" left on a run not yet started); while it encodes, the
    encoding's own pace (before its first percent, what is left of that estimate) plus the training that follows
    (`run_estimate` on the rows it drew); while it trains, its pace since training began, blended with the
    estimate before a third of the steps, the pace's weight growing from 0 as the square of the share of that
    third run: a 12-s run read "2 s left" at its first steps, which run faster than its evaluations and its test
    pass, and a 100-s run "3m 34s" at 2%, its first steps slower than the rest."""
    alike = history.alike(run.config)
    # before it has a pace: its grid's estimate at launch, the form's own figure with its share of the worker's start
    # and the encoding (the runs alike alone had put a grid's queue at "about 3 min" where the form said 18); a run
    # queued without one (the CLI's), the runs alike
    whole = run.estimate if run.estimate is not None else alike
    if run.status == Status.QUEUED:
        return whole
    began = run.claimed or run.started
    # what is left of its estimate, with no pace yet; past it, unknown rather than "0m 00s"
    rest = None if whole is None or began is None or whole - (now - began) <= 0 else whole - (now - began)
    if run.status == Status.STARTING or (run.status == Status.RUNNING and not run.phase_started):
        return rest  # its process starting, the backbone and data loading: no pace yet
    if run.status != Status.RUNNING:
        return None
    # the pace as of the last progress written, less the time since: time left falls between two writes, where it
    # had counted up (the elapsed time grew while the progress stood still)
    measured = (run.progressed or now) - run.phase_started
    since = now - (run.progressed or now)
    pace = measured * (1 - run.progress) / run.progress - since if run.progress > 0.01 else None
    pace = None if pace is None else max(pace, 0.0)
    if run.phase == "encoding":  # its own pace, then its training (unknown for a run from before runs kept rows)
        if pace is None:  # its first percent: a walk's queue read "their time is not known yet" there
            return rest
        training = alike or (run_estimate(history, run.config, tuple(run.rows[k] for k in ROWS))[0]
                             if run.rows else None)
        return None if training is None else pace + training
    if run.progress < EARLY:
        estimate = alike or (run_estimate(history, run.config, tuple(run.rows[k] for k in ROWS))[0]
                             if run.rows else None)
        if estimate is not None:  # the pace's weight grows with the steps behind it, slowly at first
            if pace is None:  # its first percent: no pace yet (a walk's monitor raised on 0.0 * None)
                return estimate * (1 - run.progress)
            weight = min(1.0, max((run.progress / EARLY) ** 2, (measured / PACE_TRUSTED) ** 2))
            return (1 - weight) * estimate * (1 - run.progress) + weight * pace
    return pace
