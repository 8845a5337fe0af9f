// A small Java bot for the seal's tests (tests/sandbox/test_seal.py): reads one
// JSON object a line, answers hello, pass (the first three cards of its hand)
// and play (the first legal card). No library: the few fields it needs are
// found with regular expressions, which is enough for the referee's compact
// JSON. Compiled with javac by the test.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public final class FirstLegal {
    private static String field(String line, String name) {
        Matcher m = Pattern.compile("\"" + name + "\"\\s*:\\s*(\"[^\"]*\"|-?\\d+)").matcher(line);
        return m.find() ? m.group(1).replace("\"", "") : null;
    }

    private static List<String> cards(String line, String name) {
        List<String> out = new ArrayList<>();
        Matcher m = Pattern.compile("\"" + name + "\"\\s*:\\s*\\[([^\\]]*)\\]").matcher(line);
        if (m.find()) {
            Matcher c = Pattern.compile("\"([^\"]+)\"").matcher(m.group(1));
            while (c.find()) {
                out.add(c.group(1));
            }
        }
        return out;
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String type = field(line, "type");
            String id = field(line, "id");
            if ("bye".equals(type)) {
                return;
            }
            if (id == null || type == null) {
                continue;
            }
            String head = "{\"type\":\"" + type + "\",\"id\":" + id;
            if (type.equals("hello")) {
                System.out.println(head + ",\"name\":\"java-first-legal\"}");
            } else if (type.equals("pass")) {
                List<String> hand = cards(line, "hand");
                System.out.println(head + ",\"cards\":[\"" + hand.get(0) + "\",\"" + hand.get(1) + "\",\"" + hand.get(2) + "\"]}");
            } else if (type.equals("play")) {
                System.out.println(head + ",\"card\":\"" + cards(line, "legal").get(0) + "\"}");
            }
            System.out.flush();
        }
    }
}
