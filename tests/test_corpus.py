"""The built-in corpus: deterministic, Subtask B shaped, and neither trivial nor hopeless."""

from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score

from core.data import SEMEVAL_LABELS, CorpusConfig, generate


def test_same_config_same_texts_and_subtask_b_shape():
    cfg = CorpusConfig(train_per_class=20, test_per_class=5)
    a_train, a_test = generate(cfg)
    b_train, _ = generate(cfg)
    assert a_train.equals(b_train)
    assert list(a_train.columns) == ["id", "text", "model", "source", "label"]
    assert a_train["label"].value_counts().to_dict() == {i: 20 for i in range(6)}
    assert len(a_test) == 30
    assert {SEMEVAL_LABELS[lab] for lab in a_train["label"]} == set(a_train["model"])


def test_tfidf_baseline_scores_between_60_and_90_percent():
    """The README states this figure (about 76%)."""
    train, test = generate(CorpusConfig())
    vec = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2)
    model = LogisticRegression(max_iter=2000).fit(vec.fit_transform(train["text"]), train["label"])
    acc = accuracy_score(test["label"], model.predict(vec.transform(test["text"])))
    assert 0.60 <= acc <= 0.90, acc
