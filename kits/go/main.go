// A Hearts bot written with the hearts-arena Go kit: kit/ runs the protocol
// loop; this file only chooses moves. Put your strategy in choosePass and
// choosePlay. Log with kit.Log (standard error); never print to stdout.
//
//	pass  the queen, king and ace of spades first, then the highest hearts,
//	      then the highest other cards.
//	play  leading: the lowest card; following suit: the highest card that
//	      still loses to the card winning the trick (duck), else, last to a
//	      trick without points, the highest card, else the lowest; void in
//	      the led suit: the queen of spades, then the highest heart, then the
//	      highest card.
package main

import "heartsbot/kit"

func choosePass(v *kit.PassView) []string {
	var first, hearts, others []string
	for _, c := range []string{"QS", "AS", "KS"} {
		if has(v.Hand, c) {
			first = append(first, c)
		}
	}
	for _, c := range v.Hand {
		if has(first, c) {
			continue
		}
		if kit.IsHeart(c) {
			hearts = append(hearts, c)
		} else {
			others = append(others, c)
		}
	}
	out := append(first, kit.Highest(hearts, len(hearts))...)
	out = append(out, kit.Highest(others, len(others))...)
	return out[:3]
}

func choosePlay(v *kit.PlayView) string {
	if v.Leading() {
		return kit.Lowest(v.Legal)
	}
	winning, _ := v.Winning()
	var follow []string
	for _, c := range v.Legal {
		if kit.Suit(c) == v.LedSuit() {
			follow = append(follow, c)
		}
	}
	if len(follow) > 0 {
		var under []string
		for _, c := range follow {
			if kit.Rank(c) < kit.Rank(winning.Card) {
				under = append(under, c)
			}
		}
		if len(under) > 0 {
			return kit.Highest(under, 1)[0]
		}
		if v.LastToPlay() && v.PointsOnTable() == 0 && !has(follow, "QS") {
			return kit.Highest(follow, 1)[0]
		}
		return kit.Lowest(follow)
	}
	if has(v.Legal, "QS") {
		return "QS"
	}
	var hearts []string
	for _, c := range v.Legal {
		if kit.IsHeart(c) {
			hearts = append(hearts, c)
		}
	}
	if len(hearts) > 0 {
		return kit.Highest(hearts, 1)[0]
	}
	return kit.Highest(v.Legal, 1)[0]
}

func has(cards []string, card string) bool {
	for _, c := range cards {
		if c == card {
			return true
		}
	}
	return false
}

func main() {
	kit.Run(kit.Bot{
		Name: "go-kit", Author: "hearts-arena kits", Version: "1",
		ChoosePass: choosePass, ChoosePlay: choosePlay,
	})
}
