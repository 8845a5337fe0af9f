package kit;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Card helpers. A card is the protocol's two-character string ("QS", "TD"). */
public final class Cards {
    /** Ranks from low to high (T is the ten). */
    public static final String RANKS = "23456789TJQKA";
    /** Suits in the protocol's sort order: clubs, diamonds, spades, hearts. */
    public static final String SUITS = "CDSH";
    public static final String QUEEN_OF_SPADES = "QS";
    public static final String TWO_OF_CLUBS = "2C";

    private Cards() {}

    /** 0 for a two ... 12 for an ace; IllegalArgumentException on a bad card. */
    public static int rank(String card) {
        int i = RANKS.indexOf(card.charAt(0));
        if (i < 0) throw new IllegalArgumentException("bad card " + card);
        return i;
    }

    /** The suit letter: 'C', 'D', 'S' or 'H'. */
    public static char suit(String card) { return card.charAt(1); }

    public static boolean isHeart(String card) { return suit(card) == 'H'; }

    /** Penalty points of a card (R11): 1 per heart, 13 for the queen of spades. */
    public static int points(String card) {
        return card.equals(QUEEN_OF_SPADES) ? 13 : (isHeart(card) ? 1 : 0);
    }

    private static int suitOrder(String card) { return SUITS.indexOf(suit(card)); }

    /** Cards in the protocol's order: by suit (C, D, S, H), then rank. */
    public static List<String> sortCards(Collection<String> cards) {
        List<String> out = new ArrayList<>(cards);
        out.sort(Comparator.comparingInt(Cards::suitOrder).thenComparingInt(Cards::rank));
        return out;
    }

    /** The cards grouped by suit, each group low to high; every suit is a key. */
    public static Map<Character, List<String>> bySuit(Collection<String> cards) {
        Map<Character, List<String>> out = new LinkedHashMap<>();
        for (char s : SUITS.toCharArray()) out.put(s, new ArrayList<>());
        for (String c : sortCards(cards)) out.get(suit(c)).add(c);
        return out;
    }

    /** The n highest cards by rank; equal ranks: hearts, spades, diamonds, clubs
     * first (as the referee's default pass). IllegalArgumentException when too few. */
    public static List<String> highest(Collection<String> cards, int n) {
        if (cards.size() < n)
            throw new IllegalArgumentException(n + " cards asked, " + cards.size() + " given");
        List<String> out = new ArrayList<>(cards);
        out.sort(Comparator.comparingInt(Cards::rank).thenComparingInt(Cards::suitOrder).reversed());
        return new ArrayList<>(out.subList(0, n));
    }

    /** The highest card by rank. */
    public static String highest(Collection<String> cards) { return highest(cards, 1).get(0); }

    /** The lowest card by rank; equal ranks: the first in protocol order. */
    public static String lowest(Collection<String> cards) {
        if (cards.isEmpty()) throw new IllegalArgumentException("no cards");
        String best = null;
        for (String c : sortCards(cards)) if (best == null || rank(c) < rank(best)) best = c;
        return best;
    }

    /** The referee's default pass: the three highest cards. */
    public static List<String> defaultPass(Collection<String> hand) { return highest(hand, 3); }

    /** The card winning a (possibly unfinished) trick so far (R10). */
    public static Played trickWinner(List<Played> played) {
        if (played.isEmpty()) throw new IllegalArgumentException("an empty trick has no winner");
        Played best = played.get(0);
        for (Played p : played)
            if (suit(p.card()) == suit(best.card()) && rank(p.card()) > rank(best.card())) best = p;
        return best;
    }
}
