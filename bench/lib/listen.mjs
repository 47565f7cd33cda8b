// A bench case's local HTTP server, listening on 127.0.0.1 at an ephemeral
// port: the one way the http and hedge cases start and stop theirs.

/** Listens `server` on 127.0.0.1; resolves `{ port, close }` (close ends every connection). */
export async function listenLocal(server) {
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  return {
    port: server.address().port,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
