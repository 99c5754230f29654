WIDTH = 100


def render(items):
    return ", ".join(items)
