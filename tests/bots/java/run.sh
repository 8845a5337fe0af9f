#!/bin/sh
# Starts FirstLegal (compiled beside this script by the test) with the JVM on PATH.
exec java -cp "$(dirname "$0")" FirstLegal
