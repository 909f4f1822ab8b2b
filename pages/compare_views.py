"""Compare's verdicts: a sentence per labeled amount that leads with what the seeds can tell, the same as a table to
sort or download, and what GAN-BERT's adversarial part and an adapted backbone add, paired by seed."""

import streamlit as st

from core import compare
from core.compare import METRIC_NAMES, charts
from core.label.simulations import kept
from pages.markdown import plain


def verdicts(summary, metric: str) -> None:
    st.subheader("Verdicts")
    st.caption(f"Per labeled amount, by test {METRIC_NAMES[metric]}: the two groups with the highest means, their "
               "paired difference with its 95% t interval and the paired test (an exact sign test up to 5 seeds, "
               "Wilcoxon's signed-rank above). A group leads only where the interval excludes 0. "
               + compare.what_seeds_allow(int(summary.verdicts["n"].max())) +
               (" Where GAN-BERT ran beside its control, the list below says what the game adds."
                if summary.ablations else ""))
    several = summary.verdicts["dataset"].nunique() > 1  # then each row's dataset first: its amount alone is ambiguous
    st.markdown("\n".join(f"- {compare.verdict_line(v)}" for v in summary.verdicts.to_dict("records")))
    with st.expander("The verdicts as a table (to sort or download)"):
        st.dataframe(summary.verdicts, hide_index=True,
                     column_order=["dataset"] * several + ["amount", "verdict", "best_series", "best_mean",
                                                           "difference", "low", "high", "p_value", "n",
                                                           "runner_up_series", "runner_up_mean"]
                                  + ["dataset"] * (not several),
                     column_config={c: st.column_config.NumberColumn(label, format="%.3f") for c, label in (
                         ("best_mean", "highest mean"), ("runner_up_mean", "next mean"),
                         ("difference", "highest − next"), ("low", "95% CI low"), ("high", "95% CI high"))} |
                     {"verdict": st.column_config.TextColumn(width=200),
                      "best_series": st.column_config.TextColumn("group with the highest mean", width=480),
                      "runner_up_series": st.column_config.TextColumn("next group", width=480),
                      "p_value": st.column_config.NumberColumn("p", format="%.4f"), "n": "seeds"}, placeholder="–")
    if summary.ablations:
        st.markdown(f"**What GAN-BERT's adversarial part adds** to test {METRIC_NAMES[metric]}: GAN-BERT − its control "
                    "(the same discriminator, rows and budget with the adversarial part off), paired by seed")
        st.markdown("\n".join(f"- {compare.adds_line(p)}" for p in summary.ablations))
    if summary.adapted:
        st.markdown(f"**What adapting the backbone adds** to test {METRIC_NAMES[metric]}: each method on the adapted "
                    "backbone − the same on its base, paired by seed\n" + "\n".join(
                        f"- {compare.adds_line(p, 'adapting')}" for p in summary.adapted))


def simulations(home) -> None:
    """The strategies simulated on the Label page or by `label --simulate`: accuracy against labels given, per
    dataset and backbone."""
    points = kept(home)
    if points.empty:
        return
    with st.expander("Which texts to label: simulated strategies", expanded=True):
        st.caption("Each strategy run with the corpus's own labels answering (Label page, or `python -m core label "
                   "--simulate`): the accuracy a logistic regression on frozen features reaches on the test split, "
                   "label by label. Random (unstratified) is what you can do without labels; stratified random knows "
                   "them.")
        for (dataset, backbone), group in points.groupby(["dataset", "backbone"], sort=True):
            seeds = group.groupby("strategy")["seed"].nunique()
            st.markdown(f"**{plain(dataset)}**, {plain(backbone)} features: " + ", ".join(
                f"{plain(name)} ({n} seed{'s' * (n > 1)})" for name, n in seeds.items()))
            st.altair_chart(charts.labels_curve(group))
