package kit;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Reader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;

import com.google.gson.Gson;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;

/** The hearts-arena bot kit for Java: extend Bot, override choosePass and
 * choosePlay (the defaults are the referee's default moves) and call run().
 * The protocol loop (protocol/README.md) is done here: read a line, answer
 * requests by id, ignore unknown fields and message types, flush after every
 * line, return on bye or end of input. The views mirror the Python kit
 * (arena/botkit.py): the same names and fields in the same order. JSON: gson
 * (Debian: libgoogle-gson-java, /usr/share/java/gson.jar).
 *
 * Safety net: if choosePass/choosePlay throws or returns a move the rules do
 * not allow, the kit logs it and sends the default move (fallback = false
 * sends it as it is). Log with log(): standard output carries the protocol. */
public abstract class Bot {
    /** Sent in the hello answer. */
    protected String name = "kit-bot";
    protected String author = null;
    protected String version = null;
    /** Replace a failing or illegal choice by the default move (logged). */
    protected boolean fallback = true;
    /** The current game, null before game_start. */
    protected GameInfo game = null;
    private List<Integer> scores = List.of(0, 0, 0, 0);
    private static final Gson GSON = new Gson();

    /** Three distinct cards of view.hand() to pass to view.to(). */
    public List<String> choosePass(PassView view) { return Cards.defaultPass(view.hand()); }

    /** One card of view.legal(). */
    public String choosePlay(PlayView view) { return view.legal().get(0); }

    /** One line on standard error, prefixed "kit: ". */
    public static void log(String text) {
        System.err.println("kit: " + text);
        System.err.flush();
    }

    /** Play on standard input and output. */
    public final void run() throws IOException {
        run(new InputStreamReader(System.in, StandardCharsets.UTF_8),
            new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
    }

    /** Play: read messages from in, answer requests on out, return on bye or end of input. */
    public final void run(Reader in, Writer out) throws IOException {
        BufferedReader reader = new BufferedReader(in, 1 << 16);
        String line;
        while ((line = reader.readLine()) != null) { // \n or \r\n; no length limit
            if (line.isBlank()) continue;
            JsonObject msg;
            try {
                JsonElement parsed = JsonParser.parseString(line);
                if (!parsed.isJsonObject()) continue;
                msg = parsed.getAsJsonObject();
            } catch (RuntimeException e) {
                log("not JSON, skipped: " + line.substring(0, Math.min(80, line.length())));
                continue;
            }
            String type = text(msg, "type");
            if ("bye".equals(type)) return;
            JsonObject reply;
            try {
                reply = handle(type, msg);
            } catch (RuntimeException e) {
                log("a message this kit cannot read, skipped: " + e);
                continue;
            }
            if (reply != null) {
                out.write(GSON.toJson(reply));
                out.write('\n');
                out.flush(); // a pipe is buffered: without this the referee waits in vain
            }
        }
    }

    private JsonObject handle(String type, JsonObject msg) {
        if (type == null) return null;
        boolean request = msg.has("id") && !msg.get("id").isJsonNull();
        JsonObject reply = new JsonObject();
        switch (type) {
            case "hello":
                if (!request) return null;
                reply.addProperty("type", "hello");
                reply.add("id", msg.get("id"));
                reply.addProperty("name", name);
                if (author != null) reply.addProperty("author", author);
                if (version != null) reply.addProperty("version", version);
                return reply;
            case "pass": {
                if (!request) return null;
                PassView view = new PassView(game, integer(msg, "hand_number"), text(msg, "direction"),
                        integer(msg, "to"), cards(msg.get("hand")), scores, integer(msg, "time_ms"));
                reply.addProperty("type", "pass");
                reply.add("id", msg.get("id"));
                reply.add("cards", GSON.toJsonTree(pass(view)));
                return reply;
            }
            case "play": {
                if (!request) return null;
                PlayView view = playView(msg);
                reply.addProperty("type", "play");
                reply.add("id", msg.get("id"));
                reply.addProperty("card", play(view));
                return reply;
            }
            case "game_start":
                game = new GameInfo(text(msg, "game_id"), integer(msg, "seat"), strings(msg.get("players")),
                        optInteger(msg, "target_score"), optInteger(msg, "hands"),
                        msg.has("seed") ? msg.get("seed").getAsLong() : 0L);
                scores = List.of(0, 0, 0, 0);
                return null;
            case "deal":
                scores = integers(msg.get("scores"));
                return null;
            default:
                return null; // a notification this kit does not use, or an unknown type
        }
    }

    private List<String> pass(PassView view) {
        if (!fallback) return choosePass(view);
        try {
            List<String> cards = choosePass(view);
            if (cards != null && cards.size() == 3 && new HashSet<>(cards).size() == 3
                    && view.hand().containsAll(cards)) return cards;
            log("choosePass returned " + cards + ": not three distinct cards of the hand");
        } catch (RuntimeException e) {
            log("choosePass threw " + e);
        }
        return Cards.defaultPass(view.hand());
    }

    private String play(PlayView view) {
        if (!fallback) return choosePlay(view);
        try {
            String card = choosePlay(view);
            if (card != null && view.legal().contains(card)) return card;
            log("choosePlay returned " + card + ", not legal (legal: " + String.join(" ", view.legal()) + ")");
        } catch (RuntimeException e) {
            log("choosePlay threw " + e);
        }
        return view.legal().get(0);
    }

    private PlayView playView(JsonObject msg) {
        List<Trick> tricks = new ArrayList<>();
        for (JsonElement t : msg.getAsJsonArray("tricks")) {
            JsonObject o = t.getAsJsonObject();
            tricks.add(new Trick(integer(o, "leader"), played(o.get("cards")), integer(o, "winner"),
                    integer(o, "points")));
        }
        JsonElement passed = msg.get("passed");
        JsonElement received = msg.get("received");
        boolean hasPassed = passed != null && passed.isJsonObject();
        boolean hasReceived = received != null && received.isJsonObject();
        return new PlayView(game, integer(msg, "seat"), integer(msg, "hand_number"),
                integer(msg, "trick_number"), integer(msg, "leader"), played(msg.get("trick")), tricks,
                cards(msg.get("hand")), cards(msg.get("legal")), msg.get("hearts_broken").getAsBoolean(),
                hasPassed ? cards(passed.getAsJsonObject().get("cards")) : null,
                hasPassed ? integer(passed.getAsJsonObject(), "to") : null,
                hasReceived ? cards(received.getAsJsonObject().get("cards")) : null,
                hasReceived ? integer(received.getAsJsonObject(), "from") : null,
                integers(msg.get("hand_points")), integers(msg.get("scores")), integer(msg, "time_ms"));
    }

    private static String text(JsonObject o, String key) {
        JsonElement e = o.get(key);
        return e == null || !e.isJsonPrimitive() ? null : e.getAsString();
    }

    private static int integer(JsonObject o, String key) { return o.get(key).getAsInt(); }

    private static Integer optInteger(JsonObject o, String key) {
        JsonElement e = o.get(key);
        return e == null || e.isJsonNull() ? null : e.getAsInt();
    }

    private static List<String> strings(JsonElement e) {
        List<String> out = new ArrayList<>();
        for (JsonElement x : e.getAsJsonArray()) out.add(x.getAsString());
        return List.copyOf(out);
    }

    private static List<String> cards(JsonElement e) { return strings(e); }

    private static List<Integer> integers(JsonElement e) {
        List<Integer> out = new ArrayList<>();
        for (JsonElement x : e.getAsJsonArray()) out.add(x.getAsInt());
        return List.copyOf(out);
    }

    private static List<Played> played(JsonElement e) {
        List<Played> out = new ArrayList<>();
        for (JsonElement x : (JsonArray) e) {
            JsonObject o = x.getAsJsonObject();
            out.add(new Played(integer(o, "seat"), text(o, "card")));
        }
        return List.copyOf(out);
    }
}
