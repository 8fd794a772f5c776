import pytest

from attention_zoo.checks import check_choice


def test_check_choice_accepts_a_choice():
    check_choice("cell", "gru", ("gru", "lstm"))


def test_check_choice_names_the_argument_and_the_value():
    message = r"`cell` must be one of \('gru', 'lstm'\)\. Received: cell='rnn'"
    with pytest.raises(ValueError, match=message):
        check_choice("cell", "rnn", ("gru", "lstm"))
