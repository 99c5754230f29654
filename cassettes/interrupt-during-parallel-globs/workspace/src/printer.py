def render(words):
    return " ".join(words)
