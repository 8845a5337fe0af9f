#!/bin/sh
# Build bot.jar: the kit and your bot compiled with javac, gson (Debian's
# libgoogle-gson-java) named in the manifest's Class-Path, so that
# `java -jar bot.jar` runs it. Run it as `hearts-arena build .` or `sh build.sh`.
set -eu
GSON=/usr/share/java/gson.jar
[ -r "$GSON" ] || { echo "build.sh: $GSON is missing: apt-get install libgoogle-gson-java" >&2; exit 1; }
rm -rf build
mkdir -p build/classes
javac --release 17 -Xlint:all -encoding UTF-8 -cp "$GSON" -d build/classes $(find src -name '*.java')
printf 'Main-Class: SampleBot\nClass-Path: %s\n' "$GSON" > build/manifest.txt
jar --create --file bot.jar --manifest build/manifest.txt -C build/classes .
