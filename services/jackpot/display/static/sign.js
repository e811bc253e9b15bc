// What every sign page of one pot group shares (display/web.py serves it as /sign.js): the
// floor's number format, why a sign is closed in Spanish, and the stream of the group's states.
const fmt = n => n.toLocaleString("es-CL");

// Why the sign is closed (display/board.py says it in English, for the log and the gRPC signs),
// as the sign shows it: in Spanish, a reason it does not know as no more than that.
function closedText(reason) {
  if (!reason) return "";
  if (reason === "waiting for the pot service") return "esperando al servicio del pozo";
  const stale = /^no update from the pot for over (\S+) s$/.exec(reason);
  if (stale) return "sin noticias del pozo hace más de " + stale[1].replace(".", ",") + " s";
  return "sin datos del pozo";
}

// The group's sign states as the display pushes them, each to show(); a lost connection closes
// the sign until the browser reconnects.
function connect(group, show) {
  const source = new EventSource("/events?group=" + encodeURIComponent(group));
  source.onmessage = e => show(JSON.parse(e.data));
  source.onerror = () => { document.body.classList.add("is-closed");
    document.getElementById("closed-reason").textContent = "sin conexión con el servidor"; };
}
