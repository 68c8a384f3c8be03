//! Collects generated lines and indents them by brace depth, so the output
//! is readable and deterministic without depending on rustfmt.

#[derive(Default)]
pub struct Writer {
    out: String,
    /// One entry per indentation level: how many brackets opened by the
    /// line that started it are still open.
    stack: Vec<usize>,
}

impl Writer {
    /// Appends one or more lines (separated by `\n`); leading whitespace is
    /// replaced by indentation: a line that leaves brackets open indents the
    /// following lines by one level until they are closed.
    pub fn line(&mut self, text: &str) {
        for l in text.split('\n') {
            let l = l.trim();
            if l.is_empty() {
                continue;
            }
            let mut opened = 0usize;
            let mut indent = None;
            let mut in_str = false;
            for c in l.chars() {
                let closer = !in_str && matches!(c, '}' | ')' | ']');
                if !closer && indent.is_none() {
                    indent = Some(self.stack.len());
                }
                match c {
                    '"' => in_str = !in_str,
                    '{' | '(' | '[' if !in_str => opened += 1,
                    '}' | ')' | ']' if !in_str => {
                        if opened > 0 {
                            opened -= 1;
                        } else if let Some(top) = self.stack.last_mut() {
                            *top -= 1;
                            if *top == 0 {
                                self.stack.pop();
                            }
                        }
                    }
                    _ => {}
                }
            }
            let indent = indent.unwrap_or(self.stack.len());
            for _ in 0..indent {
                self.out.push_str("    ");
            }
            self.out.push_str(l);
            self.out.push('\n');
            if opened > 0 {
                self.stack.push(opened);
            }
        }
    }

    pub fn blank(&mut self) {
        if !self.out.ends_with("\n\n") && !self.out.is_empty() {
            self.out.push('\n');
        }
    }

    /// A line copied as is (comments, attributes at top level).
    pub fn raw(&mut self, text: &str) {
        self.out.push_str(text);
        self.out.push('\n');
    }

    pub fn finish(self) -> String {
        self.out
    }
}
