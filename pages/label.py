"""Label: the studio picks which texts to label (active learning), the user labels them one by one; every label is
saved as it is given, and the labels become a dataset the Data and Train pages read."""

import json
from dataclasses import asdict

import streamlit as st

from core.data import load_dataset
from core.errors import InputError
from core.label import session as sessions
from core.label.export import export, export_folder
from core.label.session import DEFAULT_STRATEGY
from core.label.strategies import STRATEGIES
from core.runs import Workspace, as_runs_read_it, remember
from pages import label_views as views
from pages.markdown import plain

if "dataset" not in st.session_state:  # a deep link opened before app.py ever ran: start from the app
    st.switch_page("app.py")
home = st.session_state.registry.home

st.title("Label")
st.caption("Few labels means choosing which texts to label. The studio picks the next text by a strategy, on frozen "
           "features; you give its class. Every label is saved at once in the studio home (a reload or a second tab "
           "loses nothing), and the labels become a dataset to train on. Every label you give is one a run reads.")
spec = views.source_spec(home)
if spec is None:
    st.stop()
origin = sessions.origin(home, spec)  # the labels loaded as the dataset: labeling goes on where they came from
try:
    ds = views.corpus(json.dumps(asdict(origin), sort_keys=True), origin, home)
except InputError as e:
    st.error(f"These texts cannot be labeled: {plain(str(e))}")
    st.stop()
if origin != spec:
    st.caption(f"The loaded dataset holds labels given here: labeling goes on in the texts they came from, "
               f"{plain(ds.name)}.")

offered = {name: s for name, s in STRATEGIES.items() if not s.needs_labels}
left, middle, right = st.columns([3, 3, 1])
strategy = left.selectbox("Strategy", list(offered), format_func=lambda n: offered[n].title, key="lb_strategy",
                          persist_state="session", index=list(offered).index(DEFAULT_STRATEGY),
                          help=" · ".join(f"{s.title}: {s.about}" for s in offered.values()))
with middle:
    backbone = views.backbone_choice()
seed = int(right.number_input("Seed", min_value=0, value=0, step=1, key="lb_seed", persist_state="session"))
session = sessions.save(home, sessions.Session(ds.spec, ds.labels, strategy, backbone, seed))

try:
    lab = views.labeling(ds, backbone, home)
except InputError as e:
    st.error(plain(str(e)))
    st.stop()
r = lab.round(sessions.given(home, session, lab.id_set), strategy, seed)
views.progress(r, lab)

if r.next is None:
    st.success("Every text has a label.")
else:
    buttons = st.columns(len(lab.classes) + 1)  # above the text: a long text had pushed them out of sight
    for i, name in enumerate(lab.classes):  # alike: a filled one read as chosen; each shows its key itself
        # the text shown is bound to the click: another tab's label in between does not move it to the next text
        buttons[i].button(plain(name), key=f"lb_class_{i}", shortcut=str(i + 1) if i < 9 else None,
                          on_click=sessions.label, args=(home, session, lab.ids[r.next], name))
    views.text_card(r, lab)
    if buttons[-1].button("Undo", key="lb_undo", shortcut="u", disabled=not r.labels):
        undone = sessions.undo(home, session, lab.id_set)
        st.toast(f"Took back the label of {plain(undone)}" if undone else "No label to take back")
        st.rerun()

views.simulate_section(home, session, lab)
st.subheader("Use the labels")
st.caption(f"Writes the {len(r.labels)} labeled text(s), the rest as unlabeled texts (GAN-BERT reads them) and the "
           "labeled test split, then loads them as the dataset: the Train page trains on them.")
if st.button("Load the labels as the dataset", key="lb_export", disabled=len(set(r.labels.values())) < 2):
    try:
        exported, _ = as_runs_read_it(st.session_state.registry,
                                      export(ds, r.labels, ds.labels, export_folder(session.folder(home), ds)))
        loaded = load_dataset(exported, home)
    except InputError as e:
        st.error(plain(str(e)))
    else:
        st.session_state.dataset = loaded
        remember(st.session_state.registry, Workspace(loaded.spec, st.session_state.cleaning))
        st.session_state.lb_loaded = (f"Loaded {plain(loaded.name)}: {loaded.split_line()}. On the Train page, a "
                                      "labeled amount of 100% reads every label given.")
        st.rerun()  # the sidebar names the new dataset at once
if loaded_message := st.session_state.pop("lb_loaded", None):
    st.success(loaded_message)
