"""The Train page's "Adapt the backbone to this dataset's texts": masked-LM pretraining continued on the train
pool's texts (TAPT) as a background job, its progress, and the adapted backbones with what each cost and read."""

import time
from pathlib import Path

import streamlit as st

from core.backbone import BackboneError, adapted_backbones, adapted_name
from core.errors import InputError
from core.runs import ACTIVE, Registry, adapting, cancel_all, enqueue, outside_work
from core.runs.estimate import roughly
from core.train.adaptation import RECORD, AdaptConfig, adapt_seconds, adapted_folder, not_adaptable, pinned
from pages.markdown import plain

DEFAULTS = AdaptConfig()


@st.cache_data(show_spinner="Reading the texts it would adapt to…", max_entries=16)
def as_launched(config_json: str, home: Path) -> AdaptConfig:
    """The adaptation as it would launch (`pinned`: the texts' hash names its folder), once per choice."""
    return pinned(AdaptConfig.from_json(config_json), home)


def adapt_section(registry: Registry, ds, cleaning, backbone: str | None) -> None:
    with st.expander("Adapt the backbone to this dataset's texts", key="ad_open", on_change="rerun"):
        st.caption(f"Continues the backbone's masked-LM pretraining on **{plain(ds.name)}**'s {len(ds.train):,} "
                   "train-pool texts, their labels unused (task-adaptive pretraining, Gururangan et al. 2020). The "
                   "result is a new backbone in the picker above, which every method can use, frozen or not. It reads "
                   "the validation or test texts only when asked, and its record says so.")
        if (refused := not_adaptable(backbone)) is not None:  # said before any field: nothing here applies
            st.info(plain(refused))
            return
        c1, c2, c3, c4 = st.columns(4)
        epochs = c1.number_input("Epochs", 1, 100, DEFAULTS.epochs, key="ad_epochs", persist_state="session")
        lr = c2.number_input("Learning rate", 1e-6, 0.1, DEFAULTS.lr, format="%g", key="ad_lr", persist_state="session")
        max_len = c3.number_input("Max length (tokens)", 16, 512, DEFAULTS.max_len, key="ad_len",
                                  persist_state="session",
                                  help="Its cost grows with the length. Runs on the adapted backbone may read longer "
                                       "texts (auto picks 256 on a corpus of paragraphs): the positions past this one "
                                       "keep their pretrained weights. bench/studies/defaults.py --mode tapt measures "
                                       "both lengths (docs/methods.md)")
        seed = c4.number_input("Seed", 0, 10_000, 0, key="ad_seed", persist_state="session")
        extra = st.multiselect("Also read the texts of", ["val", "test"], key="ad_splits", persist_state="session",
                               help="Transductive: the backbone then has seen texts the runs are validated or tested "
                                    "on, and its record and name say so")
        try:
            config = as_launched(AdaptConfig(data=ds.spec, cleaning=cleaning, backbone=backbone,
                                             splits=("train", *extra), epochs=int(epochs), lr=float(lr),
                                             max_len=int(max_len), seed=int(seed)).to_json(), registry.home)
            # reads the backbone: a failed conversion says so
            done = (adapted_folder(config, registry.home) / RECORD).is_file()
        except BackboneError as e:  # the Backbone above: said there already, with how to get it
            st.info(f"The backbone chosen above is not available, so there is nothing to adapt yet ({e}).")
            return
        except InputError as e:
            st.error(str(e))
            return
        pending = bool(adapting(registry, config))
        made = adapted_backbones(registry.home)
        texts = len(ds.train) + sum(len(ds.splits[s]) for s in extra if s in ds.splits)
        took = adapt_seconds(config, texts, [record for _, record in made])
        st.caption(f"{plain(config.label)}: {texts * int(epochs):,} texts through the encoder with gradients, "
                   f"{roughly(took)}" + (" from the adaptations made here" if made else " (a rough guess from "
                                         "laptop-CPU figures: none has finished here)")
                   + (" (adapted already: it is in the picker)" if done else " (queued or running)" if pending else ""))
        if busy := outside_work(registry, time.time()):
            st.caption(busy)
        if st.button("Adapt", key="ad_go", disabled=done or pending):
            enqueue(registry, [config])
            st.rerun()
        active = any(j.status in ACTIVE for j in registry.list(kind="adapt"))
        st.fragment(run_every="2s" if active else None)(jobs)(registry, active)
        if made:
            st.markdown("**Adapted backbones** (in the Backbone picker)")
            st.dataframe([{"backbone": adapted_name(record), "base": record["base"]["name"],
                           "texts read": ", ".join(f"{n:,} {s}" for s, n in record["texts"].items()),
                           "CPU minutes": round(record["cpu_seconds"] / 60, 1),
                           "masked-LM loss": f"{record['mlm_loss_before']:.3f} → {record['mlm_loss_after']:.3f}",
                           "epochs": record["epochs"], "steps": record["steps"], "made": record["created"]}
                          for folder, record in made], hide_index=True, placeholder="–")


def jobs(registry: Registry, active: bool) -> None:
    """The adaptations queued, running and ended here, with their progress and time left; cancel the ones going.
    Refreshed every 2 s while one is going (`active`), and the whole page once they have all ended."""
    found = registry.list(kind="adapt")
    if not found:
        return
    if active and not any(j.status in ACTIVE for j in found):
        st.rerun()  # the last one ended: its backbone joins the picker
    now = time.time()
    rows = []
    for job in reversed(found):
        left = ""
        if job.status in ACTIVE and job.progress > 0 and job.phase_started:
            left = roughly((now - job.phase_started) * (1 - job.progress) / job.progress)
        rows.append({"status": job.status, "progress": round(100 * job.progress), "time left": left,
                     "adaptation": job.name, "latest": job.message or "", "job": job.id})
    st.dataframe(rows, hide_index=True, placeholder="–", column_config={
        "progress": st.column_config.ProgressColumn(format="%d%%", min_value=0, max_value=100, width="small")})
    going = [j.id for j in found if j.status in ACTIVE]
    if going:
        st.button(f"Cancel {len(going)} adaptation(s) still going", key="ad_cancel", on_click=cancel_all,
                  args=(registry, going))
