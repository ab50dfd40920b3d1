//! The real binary in a pseudo-terminal (portable-pty + vt100), shared by
//! the console's end-to-end tests: start it, press keys, wait for the
//! screen, and read what it drew and what the terminal received.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{Child, CommandBuilder, PtySize, native_pty_system};

pub const ROWS: u16 = 40;
pub const COLS: u16 = 140;
const WAIT: Duration = Duration::from_secs(180);

pub fn nz(n: u16) -> std::num::NonZeroU16 {
    std::num::NonZeroU16::new(n).unwrap()
}

pub struct Console {
    pub screen: Arc<Mutex<vt100::Parser>>,
    pub raw: Arc<Mutex<Vec<u8>>>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    pub child: Box<dyn Child + Send + Sync>,
    pub master: Box<dyn portable_pty::MasterPty + Send>,
}

impl Console {
    pub fn start(dir: &Path, args: &[&str]) -> Console {
        Console::start_with(dir, args, &[])
    }

    pub fn start_with(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Console {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows: ROWS,
                cols: COLS,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("openpty");
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_idem"));
        cmd.args(args);
        cmd.cwd(dir);
        cmd.env("TERM", "xterm-256color");
        cmd.env("IDEM_OPERATOR", "pty-test");
        cmd.env_remove("NO_COLOR");
        cmd.env_remove("IDEM_THEME");
        cmd.env_remove("IDEM_CONFIG");
        // Glyphs as UTF-8 whatever the caller's locale (see `glyphs.rs`).
        cmd.env_remove("IDEM_GLYPHS");
        cmd.env("LC_ALL", "C.UTF-8");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = pty.slave.spawn_command(cmd).expect("spawn idem");
        drop(pty.slave);
        let mut reader = pty.master.try_clone_reader().expect("reader");
        let writer = Arc::new(Mutex::new(pty.master.take_writer().expect("writer")));
        let screen = Arc::new(Mutex::new(vt100::Parser::new(nz(ROWS), nz(COLS), 0)));
        let raw = Arc::new(Mutex::new(Vec::new()));
        let (s, r, w) = (screen.clone(), raw.clone(), writer.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let mut screen = s.lock().unwrap();
                        screen.process(&buf[..n]);
                        // Answer cursor position queries as a terminal would.
                        if buf[..n].windows(4).any(|q| q == b"\x1b[6n") {
                            let (row, col) = screen.screen().cursor_position();
                            let answer = format!("\x1b[{};{}R", row + 1, col + 1);
                            let mut w = w.lock().unwrap();
                            let _ = w.write_all(answer.as_bytes());
                            let _ = w.flush();
                        }
                        r.lock().unwrap().extend_from_slice(&buf[..n]);
                    }
                }
            }
        });
        Console {
            screen,
            raw,
            writer,
            child,
            master: pty.master,
        }
    }

    pub fn contents(&self) -> String {
        self.screen.lock().unwrap().screen().contents()
    }

    /// Waits until every text is on the screen at once.
    pub fn wait_for(&mut self, texts: &[&str]) -> String {
        let start = Instant::now();
        loop {
            let screen = self.contents();
            if texts.iter().all(|t| screen.contains(t)) {
                return screen;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("idem exited ({status:?}) before showing {texts:?}; screen:\n{screen}");
            }
            if start.elapsed() > WAIT {
                panic!("timed out waiting for {texts:?}; screen:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until every text is on the screen and every job's states are
    /// read (no "loading…" in the jobs pane): a run asked for before then is
    /// refused until they are, so a test that goes on to run waits for this.
    /// The calendar's header alone shows before the states land.
    pub fn wait_for_states(&mut self, texts: &[&str]) -> String {
        loop {
            let screen = self.wait_for(texts);
            if !screen.contains("loading…") {
                return screen;
            }
            self.wait_for_gone("loading…");
        }
    }

    /// Waits until `text` is off the screen.
    pub fn wait_for_gone(&mut self, text: &str) {
        let start = Instant::now();
        while self.contents().contains(text) {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("idem exited ({status:?}) with {text:?} still on the screen");
            }
            if start.elapsed() > WAIT {
                panic!(
                    "timed out waiting for {text:?} to go; screen:\n{}",
                    self.contents()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn send(&mut self, keys: &str) {
        let mut w = self.writer.lock().unwrap();
        w.write_all(keys.as_bytes()).unwrap();
        w.flush().unwrap();
        drop(w);
        // Let the console take each batch of keys in.
        std::thread::sleep(Duration::from_millis(250));
    }

    pub fn wait_exit(&mut self) -> portable_pty::ExitStatus {
        let start = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                // Let the reader take in the last bytes.
                std::thread::sleep(Duration::from_millis(300));
                return status;
            }
            if start.elapsed() > Duration::from_secs(30) {
                let _ = self.child.kill();
                panic!("idem did not exit; screen:\n{}", self.contents());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
    }
}

/// The binary without a terminal: stdin closed, output captured.
pub fn idem(dir: &Path, args: &[&str]) -> std::process::Output {
    crate::common::idem_command()
        .args(args)
        .current_dir(dir)
        .env_remove("IDEM_CONFIG")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}
