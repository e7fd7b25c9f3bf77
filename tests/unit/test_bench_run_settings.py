from bench.run_settings import settings_line


def test_a_run_names_the_memory_settings_it_was_given_and_nothing_else() -> None:
    env = {"HIVEMEM_KMMS_ROUND_WHOLE": "1", "HIVEMEM_EMBEDDINGS_WORKERS": "2", "HIVEMEM_DATABASE_URL": "postgres://x",
           "PATH": "/bin"}  # fmt: skip
    assert settings_line(env) == "settings: HIVEMEM_EMBEDDINGS_WORKERS=2, HIVEMEM_KMMS_ROUND_WHOLE=1"


def test_a_run_with_nothing_set_says_it_ran_on_the_defaults() -> None:
    assert settings_line({"PATH": "/bin"}).startswith("settings: defaults")
