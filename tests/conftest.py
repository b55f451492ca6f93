import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

# File names carry the local date: make every test see the same one.
os.environ["TZ"] = "UTC"
time.tzset()
