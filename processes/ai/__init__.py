"""AI providers: what answers an AI step's prompt. Adapters, like the sources' (``sources/adapters``).

``local`` (the default) answers deterministically on this machine — the tests and the demo use
it, and it never leaves the instance. ``openai`` speaks the OpenAI-compatible chat-completions
API of any server at ``TURBOBASE_AI_BASE_URL``; its key comes from ``TURBOBASE_AI_API_KEY`` in the
environment and is never placed in a step's context, so a process cannot read it.
"""
