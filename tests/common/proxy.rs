//! A TCP proxy in front of a test's server, to fail the network under idem
//! in the two ways the world does.

use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

pub struct Proxy {
    pub port: u16,
    cut: CancellationToken,
    forget: CancellationToken,
    stall: CancellationToken,
    lose_commit: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Proxy {
    /// A proxy before the server of `url` (`scheme://user@host:port/db`),
    /// and the URL that goes through it.
    pub async fn before(url: &str) -> (Proxy, String) {
        let at = url
            .find('@')
            .map_or(url.find("://").expect("url") + 3, |i| i + 1);
        let end = url[at..].find('/').map_or(url.len(), |i| at + i);
        let proxy = Proxy::start(url[at..end].to_string()).await;
        let through = format!("{}127.0.0.1:{}{}", &url[..at], proxy.port, &url[end..]);
        (proxy, through)
    }

    async fn start(upstream: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let (cut, forget) = (CancellationToken::new(), CancellationToken::new());
        let stall = CancellationToken::new();
        let (stop, forgetting, stalled) = (cut.clone(), forget.clone(), stall.clone());
        let lose_commit = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let losing = lose_commit.clone();
        tokio::spawn(async move {
            loop {
                let (mut inbound, _) = tokio::select! {
                    () = stop.cancelled() => break,
                    accepted = listener.accept() => match accepted {
                        Ok(a) => a,
                        Err(_) => break,
                    },
                };
                if stalled.is_cancelled() {
                    // Accepted, and never answered.
                    let stop = stop.clone();
                    tokio::spawn(async move {
                        tokio::select! {
                            () = stop.cancelled() => {}
                            () = tokio::time::sleep(Duration::from_secs(600)) => {}
                        }
                        drop(inbound);
                    });
                    continue;
                }
                let (upstream, stop, forgetting, losing) = (
                    upstream.clone(),
                    stop.clone(),
                    forgetting.clone(),
                    losing.clone(),
                );
                // Connections made once the proxy forgot are carried as usual.
                let carried_before = !forgetting.is_cancelled();
                tokio::spawn(async move {
                    let Ok(mut outbound) = TcpStream::connect(&upstream).await else {
                        return;
                    };
                    let forgotten = async {
                        if carried_before {
                            forgetting.cancelled().await
                        } else {
                            std::future::pending().await
                        }
                    };
                    tokio::select! {
                        () = carry(&mut inbound, &mut outbound, &losing) => {}
                        () = stop.cancelled() => {}
                        () = forgotten => {
                            drop(outbound);
                            // The client's side stays open, and says nothing.
                            tokio::time::sleep(Duration::from_secs(600)).await;
                            drop(inbound);
                        }
                    }
                });
            }
        });
        Proxy {
            port,
            cut,
            forget,
            stall,
            lose_commit,
        }
    }

    /// The next COMMIT a client sends reaches the server, and its reply is
    /// lost: the proxy closes that client's connection instead, as a
    /// network failing at that moment would.
    pub fn lose_the_next_commit_reply(&self) {
        self.lose_commit
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether the COMMIT whose reply was to be lost has passed (after
    /// [`Proxy::lose_the_next_commit_reply`]).
    pub fn lost_the_commit_reply(&self) -> bool {
        !self.lose_commit.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Every connection is dropped and new ones are refused, as a server
    /// that died would.
    pub fn cut(&self) {
        self.cut.cancel();
    }

    /// New connections are accepted and never answered, as a server that
    /// stalled (or a network that drops its replies) looks to a client
    /// until its connect timeout.
    pub fn stall(&self) {
        self.stall.cancel();
    }

    /// The connections carried so far are forgotten: each one's server side
    /// is closed (the server ends the session) while its client side is
    /// held open and silent, as a connection looks from the client after a
    /// failover or a NAT that dropped it. New connections pass as before.
    pub fn forget(&self) {
        self.forget.cancel();
    }
}

/// Whether a client message holds the word `COMMIT`, not a word that
/// holds it: idem's MariaDB session setup sets `autocommit` and `READ
/// COMMITTED`, and a connection the pool opened after the loss was asked
/// for had its setup's reply lost instead of the load's COMMIT's (a flaky
/// `cancel` test).
fn holds_a_commit(message: &[u8]) -> bool {
    let word = |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_');
    (0..message.len().saturating_sub(5)).any(|i| {
        message[i..i + 6].eq_ignore_ascii_case(b"COMMIT")
            && !word(i.checked_sub(1).and_then(|j| message.get(j)))
            && !word(message.get(i + 6))
    })
}

/// Carries bytes both ways until either side closes; once `losing` is
/// set, a client message holding `COMMIT` is passed on and the connection
/// then closed before any reply reaches the client.
async fn carry(
    inbound: &mut TcpStream,
    outbound: &mut TcpStream,
    losing: &std::sync::atomic::AtomicBool,
) {
    use std::sync::atomic::Ordering;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (mut client_read, mut client_write) = inbound.split();
    let (mut server_read, mut server_write) = outbound.split();
    let lost = std::sync::atomic::AtomicBool::new(false);
    let up = async {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match client_read.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let commit = holds_a_commit(&buf[..n]) && losing.swap(false, Ordering::SeqCst);
            if commit {
                lost.store(true, Ordering::SeqCst);
            }
            if server_write.write_all(&buf[..n]).await.is_err() {
                return;
            }
            if commit {
                // The server has the COMMIT; give it a moment to act on it.
                tokio::time::sleep(Duration::from_millis(300)).await;
                return;
            }
        }
    };
    let down = async {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match server_read.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            if lost.load(Ordering::SeqCst) {
                // The reply is dropped; the close follows.
                std::future::pending::<()>().await;
            }
            if client_write.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    };
    tokio::select! {
        () = up => {}
        () = down => {}
    }
}
