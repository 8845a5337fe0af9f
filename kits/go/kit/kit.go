// Package kit is the hearts-arena bot kit for Go: the protocol loop is done
// for you (protocol/README.md describes the messages). Write ChoosePass and
// ChoosePlay (see ../main.go) and hand them to Run.
//
// The views mirror the Python kit (arena/botkit.py): the same names, the same
// fields in the same order. Cards are the protocol's two-character strings
// ("QS", "TD"). Only the standard library is used (encoding/json).
//
// Log with kit.Log (or anything writing to os.Stderr): standard output
// carries the protocol and nothing else.
package kit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// Ranks from low to high (T is the ten); Suits in the protocol's sort order.
const (
	Ranks         = "23456789TJQKA"
	Suits         = "CDSH"
	QueenOfSpades = "QS"
	TwoOfClubs    = "2C"
)

// Rank is 0 for a two ... 12 for an ace (-1 for a bad card).
func Rank(card string) int { return strings.IndexByte(Ranks, card[0]) }

// Suit is the suit letter: "C", "D", "S" or "H".
func Suit(card string) string { return card[1:2] }

// IsHeart is true for a heart.
func IsHeart(card string) bool { return card[1] == 'H' }

// Points of a card (R11): 1 per heart, 13 for the queen of spades.
func Points(card string) int {
	if card == QueenOfSpades {
		return 13
	}
	if IsHeart(card) {
		return 1
	}
	return 0
}

// SortCards returns the cards in the protocol's order: by suit (C, D, S, H), then rank.
func SortCards(cards []string) []string {
	out := append([]string(nil), cards...)
	sort.SliceStable(out, func(i, j int) bool {
		si, sj := strings.IndexByte(Suits, out[i][1]), strings.IndexByte(Suits, out[j][1])
		if si != sj {
			return si < sj
		}
		return Rank(out[i]) < Rank(out[j])
	})
	return out
}

// BySuit groups the cards by suit, each group low to high; every suit is a key.
func BySuit(cards []string) map[string][]string {
	out := map[string][]string{"C": {}, "D": {}, "S": {}, "H": {}}
	for _, c := range SortCards(cards) {
		out[Suit(c)] = append(out[Suit(c)], c)
	}
	return out
}

// Highest returns the n highest cards by rank; equal ranks: hearts, then
// spades, diamonds, clubs first (as the referee's default pass). It panics
// when there are fewer than n cards.
func Highest(cards []string, n int) []string {
	if len(cards) < n {
		panic(fmt.Sprintf("%d cards asked, %d given", n, len(cards)))
	}
	out := append([]string(nil), cards...)
	sort.SliceStable(out, func(i, j int) bool {
		ri, rj := Rank(out[i]), Rank(out[j])
		if ri != rj {
			return ri > rj
		}
		return strings.IndexByte(Suits, out[i][1]) > strings.IndexByte(Suits, out[j][1])
	})
	return out[:n]
}

// Lowest is the lowest card by rank; equal ranks: the first in protocol order.
// It panics on no cards.
func Lowest(cards []string) string {
	if len(cards) == 0 {
		panic("no cards")
	}
	best := ""
	for _, c := range SortCards(cards) {
		if best == "" || Rank(c) < Rank(best) {
			best = c
		}
	}
	return best
}

// DefaultPass is the referee's default pass: the three highest cards.
func DefaultPass(hand []string) []string { return Highest(hand, 3) }

// Played is a card on the table: who played it.
type Played struct {
	Seat int    `json:"seat"`
	Card string `json:"card"`
}

// Trick is a finished trick: leader, the four cards in play order, winner, points.
type Trick struct {
	Leader int      `json:"leader"`
	Cards  []Played `json:"cards"`
	Winner int      `json:"winner"`
	Points int      `json:"points"`
}

// TrickWinner is the card winning a (possibly unfinished) trick so far: the
// highest card of the led suit (R10). It panics on an empty trick.
func TrickWinner(played []Played) Played {
	if len(played) == 0 {
		panic("an empty trick has no winner")
	}
	best := played[0]
	for _, p := range played[1:] {
		if p.Card[1] == best.Card[1] && Rank(p.Card) > Rank(best.Card) {
			best = p
		}
	}
	return best
}

// GameInfo is the game_start notification: the game, your seat, the players
// by seat, how the game ends (TargetScore or a fixed number of Hands; nil
// for the other) and Seed for your own random choices.
type GameInfo struct {
	GameID      string   `json:"game_id"`
	Seat        int      `json:"seat"`
	Players     []string `json:"players"`
	TargetScore *int     `json:"target_score"`
	Hands       *int     `json:"hands"`
	Seed        int64    `json:"seed"`
}

// PassView is a pass request: choose three cards of Hand to give to seat To.
// Game is nil if no game_start was seen; Direction is "left", "right" or
// "across" (R3); Scores are the four totals before this hand; TimeMs the
// milliseconds you have to answer.
type PassView struct {
	Game       *GameInfo
	HandNumber int
	Direction  string
	To         int
	Hand       []string
	Scores     []int
	TimeMs     int
}

// PlayView is a play request: choose one card of Legal. Everything about the
// hand you may know is here. Passed, PassedTo, Received and ReceivedFrom are
// nil on a hold hand; HandPoints are the points each seat took this hand.
type PlayView struct {
	Game         *GameInfo
	Seat         int
	HandNumber   int
	TrickNumber  int
	Leader       int
	Trick        []Played
	Tricks       []Trick
	Hand         []string
	Legal        []string
	HeartsBroken bool
	Passed       []string
	PassedTo     *int
	Received     []string
	ReceivedFrom *int
	HandPoints   []int
	Scores       []int
	TimeMs       int
}

// Leading is true when you lead this trick.
func (v *PlayView) Leading() bool { return len(v.Trick) == 0 }

// LedSuit is the suit led in this trick, "" when you lead.
func (v *PlayView) LedSuit() string {
	if v.Leading() {
		return ""
	}
	return Suit(v.Trick[0].Card)
}

// Winning is the card winning this trick so far (ok false when you lead).
func (v *PlayView) Winning() (Played, bool) {
	if v.Leading() {
		return Played{}, false
	}
	return TrickWinner(v.Trick), true
}

// LastToPlay is true when three cards are already on the table.
func (v *PlayView) LastToPlay() bool { return len(v.Trick) == 3 }

// PointsOnTable are the penalty points of the cards played to this trick so far.
func (v *PlayView) PointsOnTable() int {
	n := 0
	for _, p := range v.Trick {
		n += Points(p.Card)
	}
	return n
}

// PlayedCards is every card played in this hand so far, finished tricks first.
func (v *PlayView) PlayedCards() []string {
	var out []string
	for _, t := range v.Tricks {
		for _, p := range t.Cards {
			out = append(out, p.Card)
		}
	}
	for _, p := range v.Trick {
		out = append(out, p.Card)
	}
	return out
}

// Bot is what Run plays: a name for the hello answer and the two choices
// (nil: the referee's default moves).
type Bot struct {
	Name, Author, Version string
	ChoosePass            func(v *PassView) []string
	ChoosePlay            func(v *PlayView) string
	// NoFallback sends your answer as it is (and lets a panic end the bot);
	// by default a panic or an illegal choice is logged and replaced by the
	// referee's default move.
	NoFallback bool
}

// Log writes one line to standard error, prefixed "kit: ".
func Log(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "kit: "+format+"\n", args...)
}

type exchange struct {
	To    *int     `json:"to"`
	From  *int     `json:"from"`
	Cards []string `json:"cards"`
}

type message struct {
	Type         string    `json:"type"`
	ID           *int64    `json:"id"`
	HandNumber   int       `json:"hand_number"`
	Direction    string    `json:"direction"`
	To           int       `json:"to"`
	Hand         []string  `json:"hand"`
	TimeMs       int       `json:"time_ms"`
	Seat         int       `json:"seat"`
	TrickNumber  int       `json:"trick_number"`
	Leader       int       `json:"leader"`
	Trick        []Played  `json:"trick"`
	Tricks       []Trick   `json:"tricks"`
	Legal        []string  `json:"legal"`
	HeartsBroken bool      `json:"hearts_broken"`
	Passed       *exchange `json:"passed"`
	Received     *exchange `json:"received"`
	HandPoints   []int     `json:"hand_points"`
	Scores       []int     `json:"scores"`
}

// Run plays: reads the referee's messages from standard input, answers the
// hello, pass and play requests, returns on bye or end of input.
func Run(bot Bot) { Play(bot, os.Stdin, os.Stdout) }

// Play is Run on other streams (for tests).
func Play(bot Bot, in io.Reader, out io.Writer) {
	reader := bufio.NewReaderSize(in, 1<<16)
	writer := bufio.NewWriter(out)
	var game *GameInfo
	scores := []int{0, 0, 0, 0}
	for {
		line, err := reader.ReadString('\n') // no length limit
		line = strings.TrimRight(line, "\r\n")
		if strings.TrimSpace(line) != "" {
			var msg message
			if jerr := json.Unmarshal([]byte(line), &msg); jerr != nil {
				Log("not a JSON object, skipped: %.80q", line)
			} else if msg.Type == "bye" {
				return
			} else if reply := handle(&bot, &msg, []byte(line), &game, &scores); reply != nil {
				data, _ := json.Marshal(reply)
				writer.Write(append(data, '\n'))
				writer.Flush() // a pipe is buffered: without this the referee waits in vain
			}
		}
		if err != nil {
			return // end of input: the referee is gone
		}
	}
}

func handle(bot *Bot, msg *message, raw []byte, game **GameInfo, scores *[]int) map[string]any {
	switch msg.Type {
	case "hello":
		if msg.ID == nil {
			return nil
		}
		reply := map[string]any{"type": "hello", "id": *msg.ID, "name": orDefault(bot.Name, "kit-bot")}
		if bot.Author != "" {
			reply["author"] = bot.Author
		}
		if bot.Version != "" {
			reply["version"] = bot.Version
		}
		return reply
	case "pass":
		if msg.ID == nil {
			return nil
		}
		view := &PassView{*game, msg.HandNumber, msg.Direction, msg.To, msg.Hand, *scores, msg.TimeMs}
		return map[string]any{"type": "pass", "id": *msg.ID, "cards": choosePass(bot, view)}
	case "play":
		if msg.ID == nil {
			return nil
		}
		view := &PlayView{
			Game: *game, Seat: msg.Seat, HandNumber: msg.HandNumber, TrickNumber: msg.TrickNumber,
			Leader: msg.Leader, Trick: msg.Trick, Tricks: msg.Tricks, Hand: msg.Hand,
			Legal: msg.Legal, HeartsBroken: msg.HeartsBroken, HandPoints: msg.HandPoints,
			Scores: msg.Scores, TimeMs: msg.TimeMs,
		}
		if msg.Passed != nil {
			view.Passed, view.PassedTo = msg.Passed.Cards, msg.Passed.To
		}
		if msg.Received != nil {
			view.Received, view.ReceivedFrom = msg.Received.Cards, msg.Received.From
		}
		return map[string]any{"type": "play", "id": *msg.ID, "card": choosePlay(bot, view)}
	case "game_start":
		var g GameInfo
		if json.Unmarshal(raw, &g) == nil {
			*game = &g
		}
		*scores = []int{0, 0, 0, 0}
	case "deal":
		if len(msg.Scores) == 4 {
			*scores = msg.Scores
		}
	}
	return nil // a notification, or a type this kit does not know: ignored
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func choosePass(bot *Bot, v *PassView) (cards []string) {
	if bot.ChoosePass == nil {
		return DefaultPass(v.Hand)
	}
	if bot.NoFallback {
		return bot.ChoosePass(v)
	}
	defer func() {
		if r := recover(); r != nil {
			Log("ChoosePass panicked: %v", r)
			cards = DefaultPass(v.Hand)
		}
	}()
	cards = bot.ChoosePass(v)
	if !threeOfHand(cards, v.Hand) {
		Log("ChoosePass returned %v: not three distinct cards of the hand", cards)
		return DefaultPass(v.Hand)
	}
	return cards
}

func choosePlay(bot *Bot, v *PlayView) (card string) {
	if bot.ChoosePlay == nil {
		return v.Legal[0]
	}
	if bot.NoFallback {
		return bot.ChoosePlay(v)
	}
	defer func() {
		if r := recover(); r != nil {
			Log("ChoosePlay panicked: %v", r)
			card = v.Legal[0]
		}
	}()
	card = bot.ChoosePlay(v)
	if !contains(v.Legal, card) {
		Log("ChoosePlay returned %q, not legal (legal: %s)", card, strings.Join(v.Legal, " "))
		return v.Legal[0]
	}
	return card
}

func contains(cards []string, card string) bool {
	for _, c := range cards {
		if c == card {
			return true
		}
	}
	return false
}

func threeOfHand(cards, hand []string) bool {
	if len(cards) != 3 || cards[0] == cards[1] || cards[0] == cards[2] || cards[1] == cards[2] {
		return false
	}
	for _, c := range cards {
		if !contains(hand, c) {
			return false
		}
	}
	return true
}
