"""The server process: everything but owning the programs (see ptyvisor.keeper).

Its life (serving: records, sockets, serving, stopping; worker: the process's entry
point); the port (httpfront: the HTTP side and the page, httpapi, access; connection
and dispatch: a WebSocket client); the sessions (supervisor; session/: one program);
the control socket (control); and what sessions keep beside them (outputlog, outbox,
renderer, records, recording, sizing, owner, keeperlink, child, identity).

Nothing is imported here."""
