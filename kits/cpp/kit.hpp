// The hearts-arena bot kit for C++17: the protocol loop is done for you
// (protocol/README.md describes the messages). Write choose_pass and
// choose_play (see bot.cpp) and hand them to kit::run.
//
// The views mirror the Python kit (arena/botkit.py): the same names, the same
// fields in the same order. Cards are the protocol's two-character strings
// ("QS", "TD"). JSON: nlohmann/json (Debian: nlohmann-json3-dev, header only).
//
// Log with kit::log (standard error); standard output carries the protocol only.
#pragma once

#include <algorithm>
#include <functional>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kit {

using Card = std::string;
using Cards = std::vector<Card>;
using json = nlohmann::json;

// Ranks from low to high (T is the ten); suits in the protocol's sort order.
inline const std::string RANKS = "23456789TJQKA";
inline const std::string SUITS = "CDSH";
inline const Card QUEEN_OF_SPADES = "QS";
inline const Card TWO_OF_CLUBS = "2C";

// 0 for a two ... 12 for an ace; throws std::invalid_argument on a bad card.
inline int rank(const Card& card) {
    auto i = card.empty() ? std::string::npos : RANKS.find(card[0]);
    if (i == std::string::npos) throw std::invalid_argument("bad card " + card);
    return static_cast<int>(i);
}
// The suit letter: 'C', 'D', 'S' or 'H'.
inline char suit(const Card& card) { return card.at(1); }
inline int suit_order(const Card& card) { return static_cast<int>(SUITS.find(suit(card))); }
inline bool is_heart(const Card& card) { return suit(card) == 'H'; }
// Penalty points of a card (R11): 1 per heart, 13 for the queen of spades.
inline int points(const Card& card) {
    return card == QUEEN_OF_SPADES ? 13 : (is_heart(card) ? 1 : 0);
}
inline bool contains(const Cards& cards, const Card& card) {
    return std::find(cards.begin(), cards.end(), card) != cards.end();
}
// Cards in the protocol's order: by suit (C, D, S, H), then rank.
inline Cards sort_cards(Cards cards) {
    std::stable_sort(cards.begin(), cards.end(), [](const Card& a, const Card& b) {
        return std::make_pair(suit_order(a), rank(a)) < std::make_pair(suit_order(b), rank(b));
    });
    return cards;
}
// The n highest cards by rank; equal ranks: hearts, spades, diamonds, clubs
// first (as the referee's default pass). Throws std::invalid_argument when
// there are too few cards.
inline Cards highest(Cards cards, std::size_t n) {
    if (cards.size() < n) throw std::invalid_argument("too few cards");
    std::stable_sort(cards.begin(), cards.end(), [](const Card& a, const Card& b) {
        return std::make_pair(rank(a), suit_order(a)) > std::make_pair(rank(b), suit_order(b));
    });
    cards.resize(n);
    return cards;
}
inline Card highest(const Cards& cards) { return highest(cards, 1).at(0); }
// The lowest card by rank; equal ranks: the first in protocol order.
inline Card lowest(const Cards& cards) {
    if (cards.empty()) throw std::invalid_argument("no cards");
    Cards sorted = sort_cards(cards);
    return *std::min_element(sorted.begin(), sorted.end(),
                             [](const Card& a, const Card& b) { return rank(a) < rank(b); });
}
// The referee's default pass: the three highest cards.
inline Cards default_pass(const Cards& hand) { return highest(hand, 3); }

// A card on the table: who played it.
struct Played {
    int seat;
    Card card;
};
// A finished trick: leader, the four cards in play order, winner, points.
struct Trick {
    int leader;
    std::vector<Played> cards;
    int winner;
    int points;
};
// The card winning a (possibly unfinished) trick so far (R10).
inline Played trick_winner(const std::vector<Played>& played) {
    if (played.empty()) throw std::invalid_argument("an empty trick has no winner");
    Played best = played[0];
    for (const auto& p : played)
        if (suit(p.card) == suit(best.card) && rank(p.card) > rank(best.card)) best = p;
    return best;
}

// The game_start notification; target_score or hands is empty.
struct GameInfo {
    std::string game_id;
    int seat;
    std::vector<std::string> players;
    std::optional<int> target_score;
    std::optional<int> hands;
    long long seed;
};

// A pass request: choose three cards of hand to give to seat `to`.
// time_ms: milliseconds you have to answer.
struct PassView {
    std::optional<GameInfo> game;
    int hand_number;
    std::string direction;
    int to;
    Cards hand;
    std::vector<int> scores;
    int time_ms;
};

// A play request: choose one card of legal. passed/received are empty on a hold hand.
struct PlayView {
    std::optional<GameInfo> game;
    int seat;
    int hand_number;
    int trick_number;
    int leader;
    std::vector<Played> trick;
    std::vector<Trick> tricks;
    Cards hand;
    Cards legal;
    bool hearts_broken;
    std::optional<Cards> passed;
    std::optional<int> passed_to;
    std::optional<Cards> received;
    std::optional<int> received_from;
    std::vector<int> hand_points;
    std::vector<int> scores;
    int time_ms;

    bool leading() const { return trick.empty(); }
    // The suit led in this trick, 0 when you lead.
    char led_suit() const { return trick.empty() ? 0 : suit(trick[0].card); }
    std::optional<Played> winning() const {
        if (trick.empty()) return std::nullopt;
        return trick_winner(trick);
    }
    bool last_to_play() const { return trick.size() == 3; }
    int points_on_table() const {
        int n = 0;
        for (const auto& p : trick) n += points(p.card);
        return n;
    }
    // Every card played in this hand so far, finished tricks first.
    Cards played() const {
        Cards out;
        for (const auto& t : tricks)
            for (const auto& p : t.cards) out.push_back(p.card);
        for (const auto& p : trick) out.push_back(p.card);
        return out;
    }
};

// One line to standard error, prefixed "kit: ".
inline void log(const std::string& text) { std::cerr << "kit: " << text << std::endl; }

// What run plays. Empty functions: the referee's default moves. With
// fallback (the default) an exception or an illegal choice is logged and
// replaced by the default move; without, it is sent as it is (or ends the bot).
struct Bot {
    std::string name = "kit-bot";
    std::string author;
    std::string version;
    std::function<Cards(const PassView&)> choose_pass;
    std::function<Card(const PlayView&)> choose_play;
    bool fallback = true;
};

namespace detail {
inline std::vector<Played> played_of(const json& items) {
    std::vector<Played> out;
    for (const auto& p : items) out.push_back({p.at("seat").get<int>(), p.at("card").get<Card>()});
    return out;
}
inline std::optional<int> opt_int(const json& msg, const char* key) {
    auto it = msg.find(key);
    if (it == msg.end() || it->is_null()) return std::nullopt;
    return it->get<int>();
}
inline std::string join(const Cards& cards) {
    std::string out;
    for (const auto& c : cards) out += (out.empty() ? "" : " ") + c;
    return out;
}
inline bool three_of_hand(const Cards& cards, const Cards& hand) {
    if (cards.size() != 3 || cards[0] == cards[1] || cards[0] == cards[2] || cards[1] == cards[2])
        return false;
    for (const auto& c : cards)
        if (!contains(hand, c)) return false;
    return true;
}
}  // namespace detail

// Play: read the referee's messages from `in`, answer the hello, pass and play
// requests on `out`, return on bye or end of input.
inline void run(const Bot& bot, std::istream& in = std::cin, std::ostream& out = std::cout) {
    std::ios::sync_with_stdio(false);
    std::optional<GameInfo> game;
    std::vector<int> scores{0, 0, 0, 0};
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.find_first_not_of(" \t") == std::string::npos) continue;
        json msg = json::parse(line, nullptr, false);
        if (msg.is_discarded() || !msg.is_object()) {
            log("not a JSON object, skipped: " + line.substr(0, 80));
            continue;
        }
        std::string type = msg.value("type", "");
        if (type == "bye") return;
        json reply;
        try {
            if (type == "hello" && msg.contains("id")) {
                reply = {{"type", "hello"}, {"id", msg["id"]}, {"name", bot.name}};
                if (!bot.author.empty()) reply["author"] = bot.author;
                if (!bot.version.empty()) reply["version"] = bot.version;
            } else if (type == "pass" && msg.contains("id")) {
                PassView v{game,
                           msg.at("hand_number").get<int>(),
                           msg.at("direction").get<std::string>(),
                           msg.at("to").get<int>(),
                           msg.at("hand").get<Cards>(),
                           scores,
                           msg.at("time_ms").get<int>()};
                Cards cards = default_pass(v.hand);
                if (bot.choose_pass && !bot.fallback) {
                    cards = bot.choose_pass(v);
                } else if (bot.choose_pass) {
                    try {
                        Cards chosen = bot.choose_pass(v);
                        if (detail::three_of_hand(chosen, v.hand))
                            cards = chosen;
                        else
                            log("choose_pass returned [" + detail::join(chosen) +
                                "]: not three distinct cards of the hand");
                    } catch (const std::exception& e) {
                        log(std::string("choose_pass threw: ") + e.what());
                    }
                }
                reply = {{"type", "pass"}, {"id", msg["id"]}, {"cards", cards}};
            } else if (type == "play" && msg.contains("id")) {
                PlayView v;
                v.game = game;
                v.seat = msg.at("seat").get<int>();
                v.hand_number = msg.at("hand_number").get<int>();
                v.trick_number = msg.at("trick_number").get<int>();
                v.leader = msg.at("leader").get<int>();
                v.trick = detail::played_of(msg.at("trick"));
                for (const auto& t : msg.at("tricks"))
                    v.tricks.push_back({t.at("leader").get<int>(), detail::played_of(t.at("cards")),
                                        t.at("winner").get<int>(), t.at("points").get<int>()});
                v.hand = msg.at("hand").get<Cards>();
                v.legal = msg.at("legal").get<Cards>();
                v.hearts_broken = msg.at("hearts_broken").get<bool>();
                const json& passed = msg.at("passed");
                if (passed.is_object()) {
                    v.passed = passed.at("cards").get<Cards>();
                    v.passed_to = passed.at("to").get<int>();
                }
                const json& received = msg.at("received");
                if (received.is_object()) {
                    v.received = received.at("cards").get<Cards>();
                    v.received_from = received.at("from").get<int>();
                }
                v.hand_points = msg.at("hand_points").get<std::vector<int>>();
                v.scores = msg.at("scores").get<std::vector<int>>();
                v.time_ms = msg.at("time_ms").get<int>();
                Card card = v.legal.at(0);
                if (bot.choose_play && !bot.fallback) {
                    card = bot.choose_play(v);
                } else if (bot.choose_play) {
                    try {
                        Card chosen = bot.choose_play(v);
                        if (contains(v.legal, chosen))
                            card = chosen;
                        else
                            log("choose_play returned " + chosen + ", not legal (legal: " +
                                detail::join(v.legal) + ")");
                    } catch (const std::exception& e) {
                        log(std::string("choose_play threw: ") + e.what());
                    }
                }
                reply = {{"type", "play"}, {"id", msg["id"]}, {"card", card}};
            } else if (type == "game_start") {
                game = GameInfo{msg.at("game_id").get<std::string>(),
                                msg.at("seat").get<int>(),
                                msg.at("players").get<std::vector<std::string>>(),
                                detail::opt_int(msg, "target_score"),
                                detail::opt_int(msg, "hands"),
                                msg.value("seed", 0LL)};
                scores = {0, 0, 0, 0};
            } else if (type == "deal") {
                scores = msg.at("scores").get<std::vector<int>>();
            }
            // any other type: a notification this kit does not use, ignored
        } catch (const json::exception& e) {
            log(std::string("a message this kit cannot read, skipped: ") + e.what());
            continue;
        }
        if (!reply.is_null()) {
            out << reply.dump() << '\n';
            out.flush();  // a pipe is buffered: without this the referee waits in vain
        }
    }
}

}  // namespace kit
