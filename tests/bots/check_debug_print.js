// Prints a debug line to stdout (not stderr) before each play, then the first legal card.
const readline = require("readline");
const rl = readline.createInterface({ input: process.stdin });
function send(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}
rl.on("line", (line) => {
  const msg = JSON.parse(line);
  if (msg.type === "bye") process.exit(0);
  if (!("id" in msg)) return;
  if (msg.type === "hello") send({ type: "hello", id: msg.id, name: "debug-js" });
  else if (msg.type === "pass") send({ type: "pass", id: msg.id, cards: msg.hand.slice(0, 3) });
  else if (msg.type === "play") {
    process.stdout.write("thinking about " + msg.legal.join(" ") + "\n");
    send({ type: "play", id: msg.id, card: msg.legal[0] });
  }
});
