"""The real-sample benches reuse finished runs (bench/sample_runs.py): a run stored before rates were written
into configs must match the setting it ran at, not today's default, or a table mixes two rates in one row."""

from __future__ import annotations

from bench.sample_runs import FINETUNE_LR_UNTIL_MEASURED, as_ran
from core.train import TrainConfig, method_for


def test_a_finetuning_run_stored_without_its_rate_ran_at_the_rate_of_its_day():
    stored = TrainConfig(method="finetune")  # the encoder trains; rate and batch left to the method
    today = method_for(stored).settle(stored)
    assert today.lr != FINETUNE_LR_UNTIL_MEASURED  # the default has moved since
    assert as_ran(stored) == today.with_(lr=FINETUNE_LR_UNTIL_MEASURED)


def test_other_stored_runs_take_the_defaults_they_ran_at_and_a_written_rate_stays():
    for stored in (TrainConfig(method="finetune", frozen=True), TrainConfig(method="adapter"),
                   TrainConfig(method="ganbert"), TrainConfig(method="ganbert", frozen=True)):
        assert as_ran(stored) == method_for(stored).settle(stored)
    assert as_ran(TrainConfig(method="finetune", lr=1e-4)).lr == 1e-4
    written_today = method_for(TrainConfig(method="finetune")).settle(TrainConfig(method="finetune"))
    assert as_ran(written_today).lr == written_today.lr == 5e-5
