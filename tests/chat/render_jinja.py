#!/usr/bin/python3
"""Renders every (template, conversation, options) case with Python's jinja2 in
the environment Hugging Face transformers uses for apply_chat_template
(ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols,
raise_exception, tojson = json.dumps(ensure_ascii=False)), and prints one JSON
array of cases on stdout for tests/chat/test_chat_golden.c to compare against
the C formatters byte for byte.

With --interpreter it prints the cases for the Jinja interpreter instead
(tests/chat/test_jinja_golden.c): every template in INTERPRETER_TEMPLATES,
the conversations of conversations.json and conversations_tools.json (tools
as OpenAI definitions, assistant tool_calls with object arguments, tool
results), strftime_now pinned to PINNED_NOW, each case carrying the exact
context object passed to render().

Templates: tests/data/chat/*.jinja (official texts, sources in README.md there)
and the tokenizer.chat_template of the GGUF files listed in GGUF_TEMPLATES.
usage: render_jinja.py [SOURCE_DIR] [--interpreter]"""
import datetime
import json
import os
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

args = [a for a in sys.argv[1:] if not a.startswith("--")]
interpreter = "--interpreter" in sys.argv[1:]
src = args[0] if args else os.path.join(os.path.dirname(__file__), "..", "..")
sys.path.insert(0, os.path.join(src, "tests", "cli"))
import gguf_dump  # noqa: E402  (stdlib-only GGUF reader)

# template file -> the family the C detector must choose
TEMPLATES = {
    "qwen3-0.6b.jinja": "qwen3",
    "qwen3.5-4b.jinja": "qwen35",
    "qwen3.6-35b-a3b.jinja": "qwen36",
    "llama-3-8b-instruct.jinja": "llama3",
    "llama-3.1-8b-instruct.jinja": "llama31",
    "llama-3.2-3b-instruct.jinja": "llama31",
}
GGUF_TEMPLATES = {
    "tests/data/tokenizer/ggml-vocab-qwen2.gguf": "chatml",
    "models/fixture-target.gguf": "chatml",
}
# The published templates the interpreter runs (sources in tests/data/chat/README.md).
INTERPRETER_TEMPLATES = [
    "qwen3-0.6b.jinja", "qwen3.5-4b.jinja", "qwen3.6-35b-a3b.jinja", "qwen3-coder.jinja",
    "qwen2.5-7b-instruct.jinja", "qwq-32b.jinja",
    "llama-3-8b-instruct.jinja", "llama-3.1-8b-instruct.jinja", "llama-3.2-3b-instruct.jinja",
    "mistral-nemo-instruct-2407.jinja", "mistral-small-3.2-24b-instruct-2506.jinja",
    "gemma-2-2b-it.jinja", "gemma-4-31b-it.jinja",
]
# strftime_now's clock in the interpreter cases: 2026-01-15 12:00:00 UTC.
PINNED_NOW = 1768478400
OPTIONS = [
    {"add_generation_prompt": True},
    {"add_generation_prompt": False},
    {"add_generation_prompt": True, "enable_thinking": False},
    {"add_generation_prompt": True, "enable_thinking": True},
    {"add_generation_prompt": True, "preserve_thinking": True},
]


class TemplateError(Exception):
    pass


def raise_exception(message):
    raise TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def strftime_now(fmt):
    return datetime.datetime.fromtimestamp(PINNED_NOW, tz=datetime.timezone.utc).strftime(fmt)


def environment(with_clock=False):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    if with_clock:
        env.globals["strftime_now"] = strftime_now
    return env


def interpreter_cases():
    env = environment(with_clock=True)
    with open(os.path.join(src, "tests", "data", "chat", "conversations.json")) as f:
        conversations = json.load(f)
    with open(os.path.join(src, "tests", "data", "chat", "conversations_tools.json")) as f:
        tooled = json.load(f)
    for conv in tooled["conversations"]:
        conv["tools"] = tooled["tools"]
    conversations += tooled["conversations"]
    cases = []
    for name in INTERPRETER_TEMPLATES:
        with open(os.path.join(src, "tests", "data", "chat", name), encoding="utf-8") as f:
            text = f.read()
        tmpl = env.from_string(text)
        for conv in conversations:
            for opts in OPTIONS:
                context = {"messages": conv["messages"]}
                if "tools" in conv:
                    context["tools"] = conv["tools"]
                context.update(bos_token="<|begin_of_text|>", eos_token="<|eot_id|>", **opts)
                case = {"template": name, "text": text, "conversation": conv["name"],
                        "context": context, "options": opts}
                try:
                    case["expected"] = tmpl.render(**context)
                except (TemplateError, jinja2.exceptions.UndefinedError, TypeError) as e:
                    case["error"] = str(e)
                cases.append(case)
    return cases


def main():
    if interpreter:
        json.dump({"now": PINNED_NOW, "cases": interpreter_cases()}, sys.stdout, ensure_ascii=False)
        return
    env = environment()
    with open(os.path.join(src, "tests", "data", "chat", "conversations.json")) as f:
        conversations = json.load(f)
    sources = []
    for name, family in TEMPLATES.items():
        with open(os.path.join(src, "tests", "data", "chat", name), encoding="utf-8") as f:
            sources.append((name, family, f.read()))
    for path, family in GGUF_TEMPLATES.items():
        kv = gguf_dump.dump(os.path.join(src, path))["kv"]
        sources.append((path, family, kv["tokenizer.chat_template"]))
    cases = []
    for name, family, text in sources:
        tmpl = env.from_string(text)
        for conv in conversations:
            for opts in OPTIONS:
                case = {"template": name, "family": family, "text": text,
                        "conversation": conv["name"], "messages": conv["messages"], "options": opts}
                try:
                    case["expected"] = tmpl.render(messages=conv["messages"],
                                                   bos_token="<|begin_of_text|>",
                                                   eos_token="<|eot_id|>", **opts)
                except (TemplateError, jinja2.exceptions.UndefinedError) as e:
                    case["error"] = str(e)
                cases.append(case)
    json.dump(cases, sys.stdout, ensure_ascii=False)


main()
