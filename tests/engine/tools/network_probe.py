"""A Python client for Bash to run in the sandbox tests: it prints where it connects (its own
audit hook says) and how the request ended. The hook refuses anything past loopback, so a
broken proxy set-up fails the test without sending anything."""

FETCH_PROGRAM = """import sys, urllib.request
def only_loopback(event, args):
    if event == "socket.connect":
        print("connect", args[1], flush=True)
        if args[1][0] not in ("127.0.0.1", "::1"):
            raise OSError("the test refuses a connection past loopback")
sys.addaudithook(only_loopback)
try:
    urllib.request.urlopen("http://192.0.2.1/", timeout=30)
except OSError as exc:
    print(exc)
"""
# 192.0.2.1 (TEST-NET-1) is never routed on the internet; offline, the client goes to the proxy,
# a closed loopback port, which refuses at once.
FETCH_COMMAND = f"python3 - <<'PY'\n{FETCH_PROGRAM}PY"
