-- Neovim's own LSP client against paperlens, for tests/test_neovim.py. Run as
--   nvim --headless --clean -u tests/nvim/scenario.lua
-- with PAPERLENS_WORKSPACE (the copied example workspace), PAPERLENS_PYTHON (the interpreter that
-- runs the server), PAPERLENS_SCENARIO (one of `scenarios` below) and PAPERLENS_RESULT (where the
-- scenario's result goes, as JSON). The test asserts on that file; this script only records.

local workspace = assert(vim.env.PAPERLENS_WORKSPACE)
local TIMEOUT_MS = 20000 -- per wait; the test gives Neovim 60 s in all

-- The version each document's last diagnostics were published for: "fresh" means the buffer's own.
local published_version = {}

-- The setup a user writes in init.lua (see README, "Other editors"), with the server run from
-- this checkout's interpreter and no debounce so the tests do not wait for it.
vim.lsp.config('paperlens', {
  cmd = { assert(vim.env.PAPERLENS_PYTHON), '-m', 'paperlens.server' },
  filetypes = { 'python' },
  root_markers = { 'pyproject.toml' },
  init_options = { paperlens = { debounceMs = 0 } },
  handlers = {
    ['textDocument/publishDiagnostics'] = function(err, params, ctx)
      vim.lsp.diagnostic.on_publish_diagnostics(err, params, ctx)
      published_version[params.uri] = params.version
    end,
  },
})
vim.lsp.enable('paperlens')

local function wait_for(what, condition)
  local value
  local done = vim.wait(TIMEOUT_MS, function()
    value = condition()
    return value ~= nil and value ~= false
  end, 20)
  if not done then
    error('timed out waiting for ' .. what, 0)
  end
  return value
end

--- Opens a workspace file (the client attaches through vim.lsp.enable) and waits for its analysis.
local function open(name)
  vim.cmd.edit(vim.fs.joinpath(workspace, name))
  local buf = vim.api.nvim_get_current_buf()
  local client = wait_for('the client to attach', function()
    return vim.lsp.get_clients({ bufnr = buf, name = 'paperlens' })[1]
  end)
  return buf, client
end

--- The diagnostics published for the buffer as it is now (possibly none).
local function fresh_diagnostics(buf)
  local uri = vim.uri_from_bufnr(buf)
  wait_for('diagnostics of version ' .. vim.lsp.util.buf_versions[buf], function()
    return published_version[uri] == vim.lsp.util.buf_versions[buf]
  end)
  return vim.diagnostic.get(buf)
end

--- A diagnostic as the user sees it: where Neovim underlines (0-based lines, byte columns, from the
--- server's range in the negotiated encoding) and the buffer's text there.
local function shown(buf, d)
  local ok, text = pcall(vim.api.nvim_buf_get_text, buf, d.lnum, d.col, d.end_lnum, d.end_col, {})
  return {
    message = d.message,
    severity = d.severity,
    lnum = d.lnum,
    col = d.col,
    end_col = d.end_col,
    text = ok and table.concat(text, '\n') or ('(no text: ' .. text .. ')'),
  }
end

local function find_diagnostic(buf, needle)
  for _, d in ipairs(fresh_diagnostics(buf)) do
    if d.message:find(needle, 1, true) then
      return d
    end
  end
  error('no diagnostic mentions ' .. needle .. ' in ' .. vim.inspect(vim.diagnostic.get(buf)), 0)
end

--- Puts the cursor on a character of the first line holding `needle` (`offset` bytes into it).
local function cursor_on(needle, offset)
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, true)
  for i, line in ipairs(lines) do
    local start = line:find(needle, 1, true)
    if start then
      vim.api.nvim_win_set_cursor(0, { i, start - 1 + offset })
      return
    end
  end
  error('no line holds ' .. needle, 0)
end

local function buffer_text(buf)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, true), '\n') .. '\n'
end

--- Picks the one code action at the cursor that `wanted` accepts, the way a user's keymap does
--- (vim.lsp.buf.code_action sends the line's diagnostics, resolves the action if need be, applies its
--- edit and runs its command), then waits until `done` says it took effect.
local function apply_code_action(wanted, done)
  local offered = {}
  vim.lsp.buf.code_action({
    apply = true,
    filter = function(action)
      table.insert(offered, action.title)
      return wanted(action)
    end,
  })
  local took_effect = vim.wait(TIMEOUT_MS, done, 20)
  if not took_effect then
    error('the code action took no effect; offered: ' .. vim.inspect(offered), 0)
  end
end

local scenarios = {}

function scenarios.diagnostics()
  local buf, client = open('train.py')
  local diagnostics = {}
  for _, d in ipairs(fresh_diagnostics(buf)) do
    table.insert(diagnostics, shown(buf, d))
  end
  return { offset_encoding = client.offset_encoding, diagnostics = diagnostics }
end

function scenarios.hover()
  local buf, client = open('tlm.py')
  fresh_diagnostics(buf)
  -- On the anchor's last character, after a λ on the same line: a byte column is not a code point.
  cursor_on('Eq. (5)', #'Eq. (5)' - 1)
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
  local responses = vim.lsp.buf_request_sync(buf, 'textDocument/hover', params, TIMEOUT_MS) or {}
  local response = responses[client.id] or {}
  local contents = response.result and response.result.contents
  return {
    offset_encoding = client.offset_encoding,
    position = params.position,
    hover_error = response.err and response.err.message,
    hover = type(contents) == 'table' and contents.value or contents,
  }
end

function scenarios.use_the_papers_value()
  local buf, client = open('train.py')
  local line = find_diagnostic(buf, 'weight_decay').lnum
  -- Unsaved edits before the value: a line above it, and a λ earlier on its own line.
  vim.api.nvim_buf_set_lines(buf, line, line, true, { '    model_λ = model  # the network, named as in the paper' })
  local after_model = #'    optimizer = build_optimizer(model'
  vim.api.nvim_buf_set_text(buf, line + 1, after_model, line + 1, after_model, { '_λ' })
  local diagnostic = find_diagnostic(buf, 'weight_decay')
  local before, version = buffer_text(buf), vim.lsp.util.buf_versions[buf]
  local underlined = shown(buf, diagnostic)
  vim.api.nvim_win_set_cursor(0, { diagnostic.lnum + 1, diagnostic.col })
  -- The quick fix the server prefers is the paper's value (a common keymap applies just that one).
  apply_code_action(function(action)
    return action.isPreferred
  end, function()
    return vim.lsp.util.buf_versions[buf] ~= version
  end)
  return {
    offset_encoding = client.offset_encoding,
    diagnostic = underlined,
    before = before,
    after = buffer_text(buf),
    modified = vim.bo[buf].modified,
  }
end

function scenarios.record_a_deviation()
  local buf, client = open('train.py')
  local diagnostic = find_diagnostic(buf, 'weight_decay')
  vim.api.nvim_win_set_cursor(0, { diagnostic.lnum + 1, diagnostic.col })
  local decisions = vim.fs.joinpath(workspace, '.paperlens', 'decisions.yaml')
  -- The action edits a buffer for the file (then the user saves everything) or has the server write it.
  apply_code_action(function(action)
    return action.title:find('deliberate deviation', 1, true) ~= nil
  end, function()
    local edited = vim.fn.bufnr(decisions) ~= -1 and vim.api.nvim_buf_line_count(vim.fn.bufnr(decisions)) > 1
    return edited or vim.uv.fs_stat(decisions) ~= nil
  end)
  local wrote, write_error = pcall(vim.cmd.wall)
  return { offset_encoding = client.offset_encoding, write_error = not wrote and tostring(write_error) or nil }
end

function scenarios.definition()
  local buf, client = open('tlm.py')
  fresh_diagnostics(buf)
  cursor_on('Eq. (3)', 2)
  vim.lsp.buf.definition()
  local target = wait_for('the jump to the paper', function()
    local name = vim.api.nvim_buf_get_name(0)
    return name:match('%.tex$') and name
  end)
  local line = vim.api.nvim_win_get_cursor(0)[1]
  return { offset_encoding = client.offset_encoding, file = target, lines = vim.api.nvim_buf_get_lines(0, line - 1, line + 3, false) }
end

-- Once Neovim has started: run the scenario, write what it saw (or why it stopped), and quit. Nested,
-- so that opening a file fires FileType, which attaches the client.
vim.api.nvim_create_autocmd('VimEnter', {
  once = true,
  nested = true,
  callback = function()
    local ok, result = xpcall(assert(scenarios[vim.env.PAPERLENS_SCENARIO], 'no such scenario'), debug.traceback)
    result = ok and result or { error = result }
    result.messages = vim.fn.execute('messages') -- what Neovim showed the user, the server's messages among it
    vim.fn.writefile({ vim.json.encode(result) }, assert(vim.env.PAPERLENS_RESULT))
    for _, client in ipairs(vim.lsp.get_clients()) do
      client:stop()
    end
    vim.wait(2000, function()
      return #vim.lsp.get_clients() == 0
    end)
    vim.cmd('qall!')
  end,
})
