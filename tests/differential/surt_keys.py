"""SURT keys from the python `surt` package, for the differential tests.

Reads one JSON string (a URL) per line on standard input and prints one
JSON object per line: {"key": surt.surt(url)} or {"error": exception name}.
"""
import json
import sys

import surt


def main():
    for line in sys.stdin:
        url = json.loads(line)
        try:
            print(json.dumps({"key": surt.surt(url)}))
        except Exception as e:  # indexers then use the URL itself
            print(json.dumps({"error": type(e).__name__}))


if __name__ == "__main__":
    main()
