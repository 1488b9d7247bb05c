"""A model's chat template rendered without transformers, in the Jinja environment its `apply_chat_template` uses.

transformers (4.x and 5.x) compiles a chat template in a sandboxed, immutable Jinja environment that trims blocks
and their leading whitespace, knows `{% break %}`/`{% continue %}` and its `{% generation %}` block, replaces
Jinja's `tojson` by a plain `json.dumps` (no HTML escaping, non-ASCII kept), and offers `raise_exception` and
`strftime_now`. It renders with `messages`, `tools` and `documents` (None when not given),
`add_generation_prompt`, the tokenizer's named special tokens (`bos_token`, `eos_token`, ...) and the caller's
keyword arguments, which win over the tokens. `render_chat` does the same, so the launcher counts a prompt's
tokens without importing transformers (and torch with it); tests/models/test_light_tokenizer.py compares both.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any, ClassVar

from jinja2 import nodes
from jinja2.exceptions import TemplateError
from jinja2.ext import Extension, loopcontrols
from jinja2.parser import Parser
from jinja2.runtime import Macro
from jinja2.sandbox import ImmutableSandboxedEnvironment


class GenerationBlock(Extension):
    """`{% generation %}...{% endgeneration %}`: marks the assistant's text for training masks; rendered as is here."""

    tags: ClassVar[set[str]] = {"generation"}

    def parse(self, parser: Parser) -> nodes.Node:
        """The block's body, called as a macro that returns its text unchanged."""
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    def _body(self, caller: Macro) -> str:
        return caller()


def to_json(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    """The `tojson` filter of chat templates: `json.dumps`, non-ASCII kept and no HTML escaping."""
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_template_error(message: str) -> None:
    """The templates' `raise_exception(message)`: stops the rendering with a Jinja TemplateError."""
    raise TemplateError(message)


def strftime_now(pattern: str) -> str:
    """The templates' `strftime_now(format)`: the local time now."""
    return datetime.now().strftime(pattern)


@lru_cache(maxsize=16)
def compiled_template(source: str) -> Any:
    """A chat template compiled once in transformers' environment (a jinja2 Template)."""
    environment = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationBlock, loopcontrols]
    )
    environment.filters["tojson"] = to_json
    helpers: dict[str, Callable[..., Any]] = {"raise_exception": raise_template_error, "strftime_now": strftime_now}
    environment.globals.update(helpers)
    return environment.from_string(source)


def render_chat(
    template: str,
    messages: Sequence[Mapping[str, Any]],
    special_tokens: Mapping[str, str],
    add_generation_prompt: bool = False,
    tools: list[dict[str, Any]] | None = None,
    documents: list[dict[str, str]] | None = None,
    **kwargs: Any,
) -> str:
    """The text a chat template makes of `messages`; `kwargs` reach the template and win over `special_tokens`."""
    return compiled_template(template).render(
        messages=messages,
        tools=tools,
        documents=documents,
        add_generation_prompt=add_generation_prompt,
        **{**special_tokens, **kwargs},
    )
