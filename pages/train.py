"""Train: choose a grid of runs, see its size and estimated time, launch it, and watch the runs."""

import time

import streamlit as st

from core import charts, compare, jobs
from core.backbone import BackboneError, describe_device, resolve_backbone
from core.config import METHODS, TrainConfig, grid, parse_numbers
from core.errors import InputError
from core.estimate import grid_seconds
from core.ray_runs import RAY_HINT, ray_available, ray_resources, use_address, use_storage
from core.runs import Registry

METHOD_NAMES = {"finetune": "BERT fine-tuning", "adapter": "BERT + adapters", "ganbert": "GAN-BERT"}
GENERATOR_NAMES = {"noise": "G1: noise", "bow": "G2: bag of words"}
PRESETS = [0.01, 0.05, 0.1, 0.5]

if "dataset" not in st.session_state:  # a deep link opened before app.py ever ran: start from the app
    st.switch_page("app.py")
ds, registry = st.session_state.dataset, Registry()
gpu = describe_device().startswith("GPU")

st.title("Train")
st.caption(f"Data: **{ds.name}** · {len(ds.train):,} train-pool texts, {len(ds.val):,} validation, "
           f"{0 if ds.test is None else len(ds.test):,} test. Defaults suit a CPU laptop: frozen-feature mode, "
           "where the encoder runs once and only heads (and GAN-BERT's generator) train.")
if ds.test is None:
    st.info("This dataset has no test split; load one with a test file on the Data page.")
    st.stop()

with st.expander("New runs", expanded=not registry.list()):
    c1, c2, c3 = st.columns(3)
    methods = c1.multiselect("Methods", METHODS, default=["finetune", "ganbert"], format_func=METHOD_NAMES.get,
                             key="tr_methods")
    generators = c2.multiselect("GAN-BERT generators", ["noise", "bow"], default=["noise", "bow"],
                                format_func=GENERATOR_NAMES.get, key="tr_generators")
    frozen = c3.toggle("Frozen-feature mode (fast on a CPU)", value=not gpu, key="tr_frozen",
                       help="Encode every text once with the frozen backbone and cache it; train heads only.")
    c1, c2, c3 = st.columns(3)
    amount = c1.radio("Labeled data", ["fraction", "per class"], horizontal=True, key="tr_amount")
    if amount == "fraction":
        fractions = c2.multiselect("Labeled fractions", PRESETS, default=PRESETS, format_func="{:.0%}".format,
                                   key="tr_fractions")
        custom = c3.text_input("Custom fractions", placeholder="e.g. 2%, 0.2", key="tr_custom")
        per_class_text = ""
    else:
        fractions, custom = [], ""
        per_class_text = c2.text_input("Labeled texts per class", "5, 20", key="tr_per_class")
    seeds_text = c3.text_input("Seeds", "0", key="tr_seeds")
    c1, c2, c3, c4 = st.columns(4)
    epochs = c1.number_input("Epochs", 1, 200, 10 if frozen else 3, key="tr_epochs")
    lr = c2.number_input("Learning rate (0: method default)", 0.0, 0.5, 0.0, format="%.0e", key="tr_lr")
    batch = c3.number_input("Batch size (0: method default)", 0, 512, 0, key="tr_batch",
                            help="16 when the encoder trains; frozen: 64 for finetune, 256 for GAN-BERT.")
    max_len = c4.number_input("Max length (tokens)", 16, 512, 128, step=16, key="tr_maxlen")
    c1, c2, c3, c4 = st.columns(4)
    backbone = c1.text_input("Backbone folder (empty: bundled MiniLM)", key="tr_backbone")
    device = c2.selectbox("Device", ["auto", "cpu", "cuda"], key="tr_device")
    bf16 = c3.toggle("bf16 autocast", key="tr_bf16",
                     help="Faster on GPUs and CPUs with native bfloat16; on CPUs without it, much slower "
                          "(7x slower for MiniLM on the 2-core test machine).")
    concurrency = c4.number_input("Local runs at once", 1, 16, jobs.concurrency(registry), key="tr_conc")
    c1, c2, c3, c4 = st.columns(4)
    address, storage, ray_cpus, gpu_fraction, resources = "", "", 1.0, 1.0, None
    backend = c1.radio("Run on", ["local", "ray"], horizontal=True, key="tr_backend",
                       format_func={"local": "this machine", "ray": "Ray cluster"}.get, disabled=not ray_available(),
                       help="Ray spreads a sweep over a cluster's CPUs and GPUs; results come back here.")
    if not ray_available():
        c2.caption(f"{RAY_HINT}, then restart the app.")
    elif backend == "ray":
        address = c2.text_input("Ray address (empty: RAY_ADDRESS or a local Ray)",
                                registry.setting("ray_address") or "", key="tr_ray_address")
        storage = c2.text_input("Storage for results (empty: sent back directly)",
                                registry.setting("ray_storage") or "", key="tr_ray_storage",
                                help="An absolute folder every node shares, or a URI such as s3://bucket/studio; "
                                     "results are copied from there into this machine's run folders.")
        ray_cpus = c3.number_input("CPUs per run", 0.5, 64.0, 1.0, step=0.5, key="tr_ray_cpus")
        gpu_fraction = c4.number_input("GPU share per run (frozen only)", 0.05, 1.0, 1.0, step=0.05,
                                       key="tr_ray_gpu", disabled=not frozen)

    try:
        resolve_backbone(backbone.strip() or None)
        base = TrainConfig(data=ds.spec, cleaning=st.session_state.cleaning, frozen=frozen, epochs=int(epochs),
                           lr=lr or None, batch_size=int(batch) or None, max_len=int(max_len),
                           backbone=backbone.strip() or None, device=device, bf16=bf16)
        configs = grid(base, methods, generators, fractions + parse_numbers(custom, "fraction") or None,
                       [int(n) for n in parse_numbers(per_class_text, "per-class count")] or None,
                       [int(s) for s in parse_numbers(seeds_text, "seed")])
        resources = ray_resources(base, ray_cpus, gpu_fraction) if backend == "ray" else None
    except (InputError, BackboneError) as e:
        st.error(str(e))
        configs = []
    if configs:
        seconds = grid_seconds(registry, configs, len(ds.train), len(ds.val), len(ds.test), len(ds.labels))
        st.markdown(f"**{len(configs)} run(s)**, about **{seconds / 60:.0f} min** in all on this machine "
                    f"(from measured throughput where runs have finished, else from laptop-CPU figures)"
                    + ("; Ray runs them side by side, as its workers allow." if backend == "ray" else "."))
    if st.button("Launch", type="primary", disabled=not configs, key="tr_launch"):
        jobs.set_concurrency(registry, int(concurrency))
        try:
            if backend == "ray":
                use_address(registry, address)
                use_storage(registry, storage)
        except InputError as e:
            st.error(str(e))
        else:
            ids = [registry.create(c, backend, resources) for c in configs]
            jobs.pump(registry)
            st.success(f"Queued {len(ids)} run(s); they run in the background and survive page reloads.")


@st.fragment(run_every="2s")
def monitor() -> None:
    jobs.pump(registry)
    runs = registry.list()
    if not runs:
        st.info("No runs yet: choose methods and fractions above, then Launch.")
        return
    table = compare.monitor_frame(runs, time.time())
    event = st.dataframe(table, key="tr_table", hide_index=True, on_select="rerun", selection_mode="single-row",
                         column_config={"progress": st.column_config.ProgressColumn("progress", min_value=0, max_value=1),
                                        "test macro-F1": st.column_config.NumberColumn(format="%.3f")})
    rows = event.selection.rows if event else []
    if not rows:
        st.caption("Select a run to see its curves and log.")
        return
    run = registry.get(table.iloc[rows[0]]["run_id"])
    st.subheader(run.label)
    epochs = compare.epochs_frame(registry, [run])
    if not epochs.empty:
        metrics = sorted(m for m in epochs["metric"].unique() if not m.startswith("val_")) + \
            ["val_accuracy", "val_macro_f1", "val_mcc"]
        st.altair_chart(charts.epoch_curves(epochs, metrics))
    st.code(jobs.tail_log(registry, run.id, 30) or "(no log yet)", language=None)
    c1, c2, c3 = st.columns(3)
    if c1.button("Cancel", disabled=run.status not in ("queued", "starting", "running"), key="tr_cancel"):
        jobs.cancel(registry, run.id)
        st.rerun(scope="fragment")
    if c2.button("Delete", disabled=run.status in ("queued", "starting", "running"), key="tr_delete"):
        registry.set_deleted(run.id)
        st.rerun(scope="fragment")
    if c3.button("Run again", key="tr_again"):
        jobs.submit(registry, run.config, backend=run.backend, resources=run.resources)
        st.rerun(scope="fragment")


st.subheader("Runs")
monitor()
