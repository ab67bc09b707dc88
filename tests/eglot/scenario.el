;;; scenario.el --- Emacs eglot against paperlens, for tests/test_eglot.py  -*- lexical-binding: t -*-

;; Run as
;;   emacs --batch -Q -l tests/eglot/scenario.el
;; with PAPERLENS_WORKSPACE (the copied example workspace), PAPERLENS_PYTHON (the interpreter that
;; runs the server), PAPERLENS_SCENARIO (one of the `paperlens-scenario-...' functions below, without
;; the prefix) and PAPERLENS_RESULT (where the scenario's result goes, as JSON). The test asserts on
;; that file; this script only records. Eglot is Debian's elpa-eglot (scripts/emacs.sh installs it).

;;; Code:

(require 'cl-lib)
(require 'json)
(require 'package)

(defconst paperlens-workspace (file-name-as-directory (getenv "PAPERLENS_WORKSPACE")))
(defconst paperlens-timeout 20 "Seconds per wait; the test gives Emacs 60 s in all.")

;; -Q leaves out site-lisp, where Debian's elpa-* packages live: activate them as site-start would.
(add-to-list 'package-directory-list "/usr/share/emacs/site-lisp/elpa")
(package-initialize)

(defvar paperlens-executed nil "The commands eglot had the server execute, in order.")

(defvar paperlens-published (make-hash-table :test #'equal)
  "File name -> the document version its last diagnostics were published for.")

(defun paperlens--setup ()
  "The setup a user writes in init.el (see README, \"Other editors\"), with the server run from
this checkout's interpreter and no debounce so the tests do not wait for it."
  (unless (require 'eglot nil t)
    (error "Emacs %s has no eglot: run scripts/emacs.sh" emacs-version))
  (setq eglot-server-programs
        `((python-mode . (,(getenv "PAPERLENS_PYTHON") "-m" "paperlens.server"
                          :initializationOptions (:paperlens (:debounceMs 0))))))
  (add-hook 'python-mode-hook #'eglot-ensure)
  ;; Eglot hands the diagnostics to Flymake without their version: note it beside.
  (cl-defmethod eglot-handle-notification :after
    (_server (_method (eql textDocument/publishDiagnostics)) &key uri version &allow-other-keys)
    (puthash (file-truename (eglot--uri-to-path uri)) version paperlens-published))
  (cl-defmethod eglot-execute-command :before (_server command _arguments)
    (push (format "%s" command) paperlens-executed)))

(defun paperlens--wait-for (what condition)
  "CONDITION's first non-nil value, waiting for the server's messages meanwhile."
  (let ((deadline (+ (float-time) paperlens-timeout))
        value)
    (while (and (not (setq value (funcall condition)))
                (< (float-time) deadline))
      (accept-process-output nil 0.02))
    (or value (error "Timed out waiting for %s" what))))

(defmacro paperlens--command (name &rest body)
  "Run BODY as the command NAME, then what Emacs's command loop runs after a command
\(`eglot-ensure' connects there, Flymake starts its checks there)."
  (declare (indent 1))
  `(let ((this-command ,name))
     (prog1 (progn ,@body)
       (run-hooks 'post-command-hook))))

(defun paperlens--open (name)
  "Visit workspace file NAME, as `find-file' does, and wait for eglot to manage it."
  (paperlens--command 'find-file
    (find-file (expand-file-name name paperlens-workspace)))
  (paperlens--wait-for "eglot to manage the buffer" (lambda () (bound-and-true-p eglot--managed-mode)))
  ;; Flymake, turned on by eglot, starts its first check once the user's next command is over.
  (paperlens--command 'forward-char)
  (current-buffer))

(defun paperlens--fresh-diagnostics ()
  "The Flymake diagnostics of the buffer as it is now (after the server analysed this version)."
  (eglot--signal-textDocument/didChange) ; what eglot's idle timer does after edits
  (paperlens--wait-for (format "diagnostics of version %s" eglot--versioned-identifier)
                       (lambda () (equal (gethash (file-truename buffer-file-name) paperlens-published)
                                         eglot--versioned-identifier)))
  (flymake-diagnostics))

(defun paperlens--shown (d)
  "A Flymake diagnostic as the user sees it: the buffer's text it highlights, and where."
  (let ((beg (flymake-diagnostic-beg d))
        (end (flymake-diagnostic-end d)))
    `((message . ,(flymake-diagnostic-text d))
      (type . ,(symbol-name (flymake-diagnostic-type d)))
      (line . ,(line-number-at-pos beg t))
      (beg . ,beg)
      (end . ,end)
      (text . ,(buffer-substring-no-properties beg end)))))

(defun paperlens--find-diagnostic (needle)
  (or (cl-find-if (lambda (d) (string-search needle (flymake-diagnostic-text d)))
                  (paperlens--fresh-diagnostics))
      (error "No diagnostic mentions %s in %S" needle
             (mapcar #'flymake-diagnostic-text (flymake-diagnostics)))))

(defun paperlens--point-on (needle offset)
  "Puts point on a character of the first occurrence of NEEDLE (OFFSET characters into it)."
  (goto-char (point-min))
  (unless (search-forward needle nil t)
    (error "No line holds %s" needle))
  (goto-char (+ (match-beginning 0) offset)))

(defun paperlens--buffer-text ()
  (save-restriction (widen) (buffer-substring-no-properties (point-min) (point-max))))

(defun paperlens--encoding ()
  "The position encoding eglot and the server agreed on (none named: UTF-16, LSP's default)."
  (or (plist-get (eglot--capabilities (eglot-current-server)) :positionEncoding) "utf-16 (unnamed)"))

(defun paperlens--apply-code-action (d wanted)
  "Picks the code action WANTED accepts among those for diagnostic D, the way a user does with
\\[eglot-code-actions] on it (eglot sends the diagnostic, applies the action's edit and runs its
command); answers with the titles offered."
  (let ((last-nonmenu-event ?\r) ; a keyboard user: eglot asks with `completing-read', not a menu
        offered)
    (cl-letf (((symbol-function 'completing-read)
               (lambda (_prompt menu-items &rest _)
                 (setq offered (mapcar #'car menu-items))
                 (or (cl-find-if wanted offered)
                     (error "None of the code actions is wanted: %S" offered)))))
      (paperlens--command 'eglot-code-actions
        (eglot-code-actions (flymake-diagnostic-beg d) (flymake-diagnostic-end d) nil t)))
    (vconcat offered)))

(defun paperlens-scenario-diagnostics ()
  (paperlens--open "train.py")
  `((offset_encoding . ,(paperlens--encoding))
    (diagnostics . ,(vconcat (mapcar #'paperlens--shown (paperlens--fresh-diagnostics))))))

(defun paperlens-scenario-hover ()
  (paperlens--open "tlm.py")
  (paperlens--fresh-diagnostics)
  ;; On the anchor's first character, after a λ on the same line: a UTF-8 column would land earlier.
  (paperlens--point-on "Eq. (5)" 0)
  (let* ((position (eglot--pos-to-lsp-position))
         (response (jsonrpc-request (eglot--current-server-or-lose) :textDocument/hover
                                    `(:textDocument ,(eglot--TextDocumentIdentifier) :position ,position)))
         (contents (plist-get response :contents)))
    `((offset_encoding . ,(paperlens--encoding))
      (position . ,position)
      (hover . ,(if (stringp contents) contents (plist-get contents :value))))))

(defun paperlens-scenario-use_the_papers_value ()
  (paperlens--open "train.py")
  (let* ((line (line-number-at-pos (flymake-diagnostic-beg (paperlens--find-diagnostic "weight_decay")))))
    ;; Unsaved edits before the value: a line above it, and a λ earlier on its own line.
    (paperlens--command 'self-insert-command
      (goto-char (point-min))
      (forward-line (1- line))
      (insert "    model_λ = model  # the network, named as in the paper\n"))
    (paperlens--command 'self-insert-command
      (search-forward "build_optimizer(model")
      (insert "_λ"))
    (let* ((diagnostic (paperlens--find-diagnostic "weight_decay"))
           (underlined (paperlens--shown diagnostic))
           (before (paperlens--buffer-text))
           (offered (paperlens--apply-code-action
                     diagnostic (lambda (title) (string-prefix-p "Use the paper's" title)))))
      `((offset_encoding . ,(paperlens--encoding))
        (diagnostic . ,underlined)
        (offered . ,offered)
        (before . ,before)
        (after . ,(paperlens--buffer-text))
        (modified . ,(if (buffer-modified-p) t :json-false))))))

(defun paperlens-scenario-record_a_deviation ()
  (paperlens--open "train.py")
  (let* ((decisions (expand-file-name ".paperlens/decisions.yaml" paperlens-workspace))
         (offered (paperlens--apply-code-action
                   (paperlens--find-diagnostic "weight_decay")
                   (lambda (title) (string-prefix-p "Record weight_decay = 5e-4 as a deliberate deviation" title)))))
    ;; The server writes the file when eglot runs the action's command (or eglot edits a buffer for it).
    (paperlens--wait-for "the decisions file"
                         (lambda () (or (file-exists-p decisions) (find-buffer-visiting decisions))))
    (let ((unsaved (cl-loop for b in (buffer-list)
                            when (and (buffer-file-name b) (buffer-modified-p b))
                            collect (buffer-file-name b))))
      `((offset_encoding . ,(paperlens--encoding))
        (offered . ,offered)
        (executed . ,(vconcat (reverse paperlens-executed)))
        (unsaved . ,(vconcat unsaved))))))

(defun paperlens-scenario-definition ()
  (paperlens--open "tlm.py")
  (paperlens--fresh-diagnostics)
  (paperlens--point-on "Eq. (3)" 2)
  (let* ((response (jsonrpc-request (eglot--current-server-or-lose) :textDocument/definition
                                    (eglot--TextDocumentPositionParams)))
         (location (if (vectorp response) (aref response 0) response))
         (uri (or (plist-get location :targetUri) (plist-get location :uri)))
         (range (or (plist-get location :targetSelectionRange) (plist-get location :range)))
         (encoding (paperlens--encoding)))
    ;; And the jump itself, as M-. does it through eglot's xref backend.
    (paperlens--command 'xref-find-definitions
      (call-interactively #'xref-find-definitions))
    `((offset_encoding . ,encoding)
      (uri . ,uri)
      (line . ,(plist-get (plist-get range :start) :line))
      (file . ,buffer-file-name)
      (lines . ,(vconcat (split-string (buffer-substring-no-properties
                                        (line-beginning-position) (line-end-position 4))
                                       "\n"))))))

(defun paperlens--server-stderr ()
  (mapconcat (lambda (server)
               (with-current-buffer (jsonrpc-stderr-buffer server)
                 (buffer-substring-no-properties (point-min) (point-max))))
             (cl-loop for servers being the hash-values of eglot--servers-by-project append servers)
             "\n"))

(defun paperlens--messages ()
  (with-current-buffer (messages-buffer) (buffer-substring-no-properties (point-min) (point-max))))

;; Run the scenario, write what it saw (or why it stopped), and quit.
(let ((result (condition-case err
                  (progn
                    (paperlens--setup)
                    (funcall (intern (concat "paperlens-scenario-" (getenv "PAPERLENS_SCENARIO")))))
                (error `((error . ,(error-message-string err)))))))
  ;; What Emacs showed the user (the server's messages among it), and on failure what the server logged.
  (setq result (append result `((messages . ,(paperlens--messages)))))
  (when (and (assq 'error result) (featurep 'eglot))
    (setq result (append result `((server_stderr . ,(paperlens--server-stderr))))))
  (let ((coding-system-for-write 'utf-8))
    (write-region (json-encode result) nil (getenv "PAPERLENS_RESULT")))
  (when (featurep 'eglot)
    (ignore-errors (eglot-shutdown-all)))
  (kill-emacs 0))

;;; scenario.el ends here
