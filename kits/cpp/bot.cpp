// A Hearts bot written with the hearts-arena C++ kit: kit.hpp runs the protocol
// loop; this file only chooses moves. Put your strategy in choose_pass and
// choose_play. Log with kit::log (standard error); never write to std::cout.
//
//   pass  the queen, king and ace of spades first, then the highest hearts,
//         then the highest other cards.
//   play  leading: the lowest card; following suit: the highest card that
//         still loses to the card winning the trick (duck), else, last to a
//         trick without points, the highest card, else the lowest; void in
//         the led suit: the queen of spades, then the highest heart, then
//         the highest card.
#include "kit.hpp"

using kit::Card;
using kit::Cards;

Cards choose_pass(const kit::PassView& view) {
    Cards first, hearts, others;
    for (const Card& c : Cards{"QS", "AS", "KS"})
        if (kit::contains(view.hand, c)) first.push_back(c);
    for (const Card& c : view.hand) {
        if (kit::contains(first, c)) continue;
        (kit::is_heart(c) ? hearts : others).push_back(c);
    }
    Cards out = first;
    for (const Card& c : kit::highest(hearts, hearts.size())) out.push_back(c);
    for (const Card& c : kit::highest(others, others.size())) out.push_back(c);
    out.resize(3);
    return out;
}

Card choose_play(const kit::PlayView& view) {
    if (view.leading()) return kit::lowest(view.legal);
    Card winning = view.winning()->card;
    Cards follow;
    for (const Card& c : view.legal)
        if (kit::suit(c) == view.led_suit()) follow.push_back(c);
    if (!follow.empty()) {
        Cards under;
        for (const Card& c : follow)
            if (kit::rank(c) < kit::rank(winning)) under.push_back(c);
        if (!under.empty()) return kit::highest(under);
        if (view.last_to_play() && view.points_on_table() == 0 && !kit::contains(follow, "QS"))
            return kit::highest(follow);
        return kit::lowest(follow);
    }
    if (kit::contains(view.legal, "QS")) return "QS";
    Cards hearts;
    for (const Card& c : view.legal)
        if (kit::is_heart(c)) hearts.push_back(c);
    return hearts.empty() ? kit::highest(view.legal) : kit::highest(hearts);
}

int main() {
    kit::Bot bot;
    bot.name = "cpp-kit";
    bot.author = "hearts-arena kits";
    bot.version = "1";
    bot.choose_pass = choose_pass;
    bot.choose_play = choose_play;
    kit::run(bot);
}
