//! A TCP proxy in front of a test's server, to fail the network under idem
//! in the two ways the world does.

use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

pub struct Proxy {
    pub port: u16,
    cut: CancellationToken,
    forget: CancellationToken,
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
        let (stop, forgetting) = (cut.clone(), forget.clone());
        tokio::spawn(async move {
            loop {
                let (mut inbound, _) = tokio::select! {
                    () = stop.cancelled() => break,
                    accepted = listener.accept() => match accepted {
                        Ok(a) => a,
                        Err(_) => break,
                    },
                };
                let (upstream, stop, forgetting) =
                    (upstream.clone(), stop.clone(), forgetting.clone());
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
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
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
        Proxy { port, cut, forget }
    }

    /// Every connection is dropped and new ones are refused, as a server
    /// that died would.
    pub fn cut(&self) {
        self.cut.cancel();
    }

    /// The connections carried so far are forgotten: each one's server side
    /// is closed (the server ends the session) while its client side is
    /// held open and silent, as a connection looks from the client after a
    /// failover or a NAT that dropped it. New connections pass as before.
    pub fn forget(&self) {
        self.forget.cancel();
    }
}
