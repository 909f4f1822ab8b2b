from core.data import CleaningConfig, clean_text, with_cleaning


def test_all_steps_off_by_default_leave_text_alone():
    text = "Don't touch THIS: 42 $$!"
    assert clean_text(text, CleaningConfig()) == text


def test_contractions_expand_with_case_and_curly_apostrophes():
    cfg = CleaningConfig(expand_contractions=True)
    assert clean_text("Won't you? I’m sure they'd say we can't.", cfg) == \
        "Will not you? I am sure they would say we cannot."


def test_strip_special_drops_digits_and_symbols_keeps_punctuation():
    cfg = CleaningConfig(strip_special=True)
    assert clean_text("Price: $42 #deal, (really)!", cfg) == "Price: deal, (really)!"


def test_all_steps_in_order():
    cfg = CleaningConfig(True, True, True)
    assert clean_text("It's 2024 — WOW", cfg) == "it is wow"


def test_cleaning_a_dataset_changes_its_fingerprint(small_builtin):
    cleaned = with_cleaning(small_builtin, CleaningConfig(lowercase=True))
    assert cleaned.fingerprint != small_builtin.fingerprint
    assert cleaned.train["text"].str.islower().all()
    assert with_cleaning(small_builtin, CleaningConfig()) is small_builtin
