"""An assistant prefill (``continue_final_message``): which stacks continue a final assistant message, and how
transformers 5.24 cuts the prompt there (``utils/chat_template_utils.py``: a tag appended to the final message's
text, the prompt cut where the tag is, an error when the template does not write the final message)."""

from __future__ import annotations

from typing import Any

from tokaudit.template.renders import Render

#: The stacks that continue a final assistant message: transformers' ``apply_chat_template(continue_final_message=)``,
#: vLLM's request field of that name (serving_chat passes it to transformers), llama-server's ``prefill_assistant``
#: (on by default: a conversation that ends with an assistant message is continued). SGLang, smg, TGI, mistral.rs
#: and Dynamo always add the generation prompt (their profiles).
CONTINUES_FINAL_MESSAGE = ("transformers", "vllm", "llama.cpp")
#: transformers 5.24 (utils/chat_template_utils.py): the tag appended to the final message, where the prompt is cut.
CONTINUE_TAG = "CONTINUE_FINAL_MESSAGE_TAG "


def tag_final_message(ctx: dict[str, Any]) -> str | None:
    """transformers' continue_final_message: the tag after the final message's text (its last text part); the text, or
    None when the context holds none (the template reads no messages)."""
    messages = ctx.get("messages") or []
    if not messages or not isinstance(messages[-1], dict):
        return None
    last = messages[-1] = dict(messages[-1])
    content = last.get("content")
    if isinstance(content, str):
        last["content"] = content + CONTINUE_TAG
        return content
    if isinstance(content, list):
        parts = last["content"] = [dict(p) if isinstance(p, dict) else p for p in content]
        for part in reversed(parts):
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                text = part["text"]
                part["text"] = text + CONTINUE_TAG
                return text
    return None


def cut_at_tag(render: Render, final: str) -> Render:
    """The prompt up to the tag (transformers' check and cut): the template must write the final message."""
    text = render.text
    if text is None:
        return render
    if final.strip() not in text or CONTINUE_TAG.strip() not in text:
        return Render(
            render.engine,
            None,
            "ValueError: continue_final_message is set but the final message does not appear "
            "in the chat after applying the chat template!",
            "raise",
        )
    at = text.rindex(CONTINUE_TAG.strip())
    return Render(render.engine, text[:at] if text[at : at + len(CONTINUE_TAG)] == CONTINUE_TAG else text[:at].rstrip())
