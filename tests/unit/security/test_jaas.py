import pytest

from brownout.security.jaas import (
    PLAIN_LOGIN_MODULE,
    JaasConfigError,
    parse_jaas_config,
    parse_sasl_jaas_config,
)

KAFKA_EXAMPLE = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
    'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";'
)


def test_kafka_documentation_example():
    entry = parse_sasl_jaas_config(KAFKA_EXAMPLE)
    assert entry.login_module == PLAIN_LOGIN_MODULE
    assert entry.flag == "required"
    assert entry.options["username"] == "admin"
    assert entry.users() == {"admin": "admin-secret", "alice": "alice-secret"}


def test_quotes_escapes_comments_and_bare_words():
    text = """
        // a comment
        com.example.Module REQUIRED /* inline */ a=word-with_$dots.1
        b='single "quoted"' c="esc\\"aped\\\\" d="";
    """
    entry = parse_sasl_jaas_config(text)
    assert entry.flag == "required"
    assert entry.options == {
        "a": "word-with_$dots.1",
        "b": 'single "quoted"',
        "c": 'esc"aped\\',
        "d": "",
    }


def test_several_entries_parse_but_a_property_takes_exactly_one():
    text = KAFKA_EXAMPLE + " other.Module optional;"
    assert [e.login_module for e in parse_jaas_config(text)] == [
        PLAIN_LOGIN_MODULE, "other.Module"]
    with pytest.raises(JaasConfigError, match="contains 2 login modules, should be 1 module"):
        parse_sasl_jaas_config(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Login module not specified in JAAS config"),
        ("   // only a comment", "Login module not specified in JAAS config"),
        ("x.Module", "Login module control flag not specified in JAAS config"),
        ("x.Module mandatory;", "Invalid login module control flag 'mandatory' in JAAS config"),
        ('x.Module required a="1"', "JAAS config entry not terminated by semi-colon"),
        ("x.Module required a=;", "Value not specified for key 'a' in JAAS config"),
        ("x.Module required a;", "Value not specified for key 'a' in JAAS config"),
        # As with Java's StreamTokenizer, a bare number has no string value: quote it.
        ("x.Module required iterations=4096;",
         "Value not specified for key 'iterations' in JAAS config"),
    ],
)
def test_malformed_configs_fail_with_kafkas_messages(text, message):
    with pytest.raises(JaasConfigError, match=message):
        parse_jaas_config(text)
