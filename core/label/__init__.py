"""Which texts to label: a labeling session over a corpus without labels (or with labels kept hidden, as a
simulation's oracle), query strategies on frozen features, the classifier the labels make at every round, and the
labeled file the labels export to. Reads `core.data`, the feature store of `core.train`; knows nothing of runs."""
