#!/bin/bash
# The terminal explorer under tmux: starts `glowc explore` on a small model
# in a detached 120x40 terminal, presses keys, and checks what the screen
# shows -- stepping through passes, switching views, searching, scrolling
# sideways (with markers where lines are cut), following a %ref to its
# definition, completing node names with Tab, REPL commands on the : line,
# writing SVG where the s prompt says (checked to be well-formed XML with the
# expected number of nodes), running, comparing, resizing to 80x24 and back,
# quitting, and the terminal
# being restored after q, SIGINT and SIGTERM (also while a model loads),
# after a model that fails to load, and on a terminal that cannot move the
# cursor.
#
# usage: tests/tui/explore_test.sh [path/to/glowc]     (exit status 0: all passed)
set -u

GLOWC=$(realpath "${1:-build/glowc}")
PYTHON=/usr/bin/python3
WORK=$(mktemp -d /tmp/glowc-tui.XXXXXX)
SOCK="glowc-tui-$$"
TMUX_CMD=(tmux -L "$SOCK")
FAILED=0

cleanup() {
    "${TMUX_CMD[@]}" kill-server 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

cat > "$WORK/model.hl" <<'EOF'
func @main(%x: f32<1x1x4x4>) -> (y: f32<1x2x4x4>) {
  %w = constant f32<2x1x3x3> dense<[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, -0.1, -0.2, -0.3, -0.4, -0.5, -0.6, -0.7, -0.8, -0.9]>
  %b = constant f32<2> dense<[0.5, -0.5]>
  %s = constant f32<1x2x4x4> splat<2>
  %1 = conv(%x, %w, %b) {kernel=[3,3] strides=[1,1] pads=[1,1,1,1] dilations=[1,1] group=1} : f32<1x2x4x4> loc("Conv_0")
  %2 = relu(%1) : f32<1x2x4x4> loc("Relu_1")
  %3 = relu(%1) : f32<1x2x4x4> loc("Relu_2")
  %4 = add(%2, %3) : f32<1x2x4x4> loc("Add_3")
  %5 = mul(%4, %s) : f32<1x2x4x4> loc("Mul_4")
  return %5
}
EOF
printf 'not an onnx model' > "$WORK/broken.onnx"

# Runs the explorer, then reports how it ended and whether the terminal is
# back in canonical mode with echo (what a crashed curses program leaves off).
cat > "$WORK/wrap.sh" <<'EOF'
#!/bin/bash
trap 'true' INT
"$@"
echo "EXIT=$?"
stty -a | tr ' ;' '\n\n' | grep -x -- '-\?icanon\|-\?echo' | tr '\n' ' ' | sed 's/^/TTY=/'
echo
sleep 600
EOF
chmod +x "$WORK/wrap.sh"

fail() {
    echo "FAIL: $*"
    echo "---- screen ----"
    "${TMUX_CMD[@]}" capture-pane -t ui -p
    echo "----------------"
    FAILED=1
}

screen() {
    "${TMUX_CMD[@]}" capture-pane -t ui -p
}

# Waits (up to 30 s: opening a model runs the pipeline down to LLVM's O3)
# until the screen shows $2, which grep option $1 makes a fixed string (-F)
# or an extended regular expression (-E).
wait_for() {
    for _ in $(seq 300); do
        screen | grep -q "$1" -- "$2" && return 0
        sleep 0.1
    done
    if [ "$1" = -E ]; then fail "expected on screen (regex): $2"; else fail "expected on screen: $2"; fi
    return 1
}

expect() { wait_for -F "$1"; }
expect_re() { wait_for -E "$1"; }

# The screen must not show $1.
refute() {
    screen | grep -qF -- "$1" && fail "did not expect on screen: $1"
    return 0
}

keys() {
    "${TMUX_CMD[@]}" send-keys -t ui "$@"
    sleep 0.2
}

# A session that outlives the others keeps the server up: killing the last
# session ends the server, and a new session started meanwhile fails
# ("server exited unexpectedly").
"${TMUX_CMD[@]}" new-session -d -s keep sleep 3600

start() {
    "${TMUX_CMD[@]}" kill-session -t ui 2>/dev/null
    "${TMUX_CMD[@]}" new-session -d -s ui -x "$1" -y "$2" -c "$WORK" "$WORK/wrap.sh" \
        env TMPDIR="$WORK" "${@:3}"
}

# Counts the SVG's node groups; fails unless it parses and has $2 of them.
check_svg() {
    local n
    n=$("$PYTHON" - "$1" <<'EOF'
import sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
ns = '{http://www.w3.org/2000/svg}'
print(sum(1 for g in root.iter(ns + 'g') if g.get('class') == 'node'))
EOF
) || { fail "$1 is not well-formed XML"; return 1; }
    [ "$n" = "$2" ] || fail "$1 has $n node elements, expected $2"
}

PASSES=cse,fuse-activation,dce,irgen,share-buffers,allocate

# ---- stepping through the pipeline --------------------------------------------
start 120 40 "$GLOWC" explore model.hl --passes=$PASSES
expect "model.hl | step 0/8: import | graph"
expect "0 import"
expect "2 fuse-activation"
expect_re "6 allocate +\+1-1"             # allocation places a buffer: its line shows the offset
expect "7 codegen"
expect "8 llvm-opt"
expect 'func @main(%x: f32<1x1x4x4>)'
expect "1 graph 2 dot 3 lir 4 mem 5 llvm 6 diff 7 stats"

keys n                                   # the next step that changed something
expect "step 1/8: cse"
keys j j                                 # the cursor moves; the current step stays
expect "step 1/8: cse"
keys Enter                               # ... until Enter selects
expect "step 3/8: dce"
keys p                                   # back to the previous step that changed
expect "step 2/8: fuse-activation"
refute 'act=relu'                      # beyond the pane's right edge, ...
expect_re '│  %1 = conv\(%x, %w, %b\) .*>$'  # ... which a > marks at the cut
refute '│<'                              # nothing is hidden to the left
keys Right Right Right Right Right Right Right Right Right Right
expect 'act=relu'                      # ... until scrolled sideways
expect_re '│<.*act=relu'                # now cut on the left, marked <
expect_re 'graph col [0-9]+'             # the status line says the column
keys Left Left Left Left Left Left Left Left Left Left
expect '  %1 = conv(%x, %w, %b)'
refute '│<'
keys 6                                   # the diff: - and + differ past the edge
expect_re '^.*│-  %1 = conv\(%x, %w, %b\) .*>$'
expect_re '^.*│\+  %1 = conv\(%x, %w, %b\) .*>$'
keys l l l l l l l l l l                 # h and l scroll sideways too
expect 'act=relu} : f32<1x2x4x4>'      # the + line's change is in view
expect 'group=1} : f32<1x2x4x4>'         # and the - line's end
keys 0                                   # back to the left edge
expect '+  %1 = conv(%x, %w, %b)'
keys 1

# ---- views --------------------------------------------------------------------
keys 6
expect "+++ step 2 fuse-activation (graph)"
expect '-  %2 = relu(%1)'
keys Right Right                         # the fused conv's change, in reverse video
for _ in $(seq 50); do
    "${TMUX_CMD[@]}" capture-pane -t ui -e -p | grep -aqE $'\e''\[[0-9;]*7[0-9;]*m act=relu' && break
    sleep 0.1
done || true
"${TMUX_CMD[@]}" capture-pane -t ui -e -p | grep -aqE $'\e''\[[0-9;]*7[0-9;]*m act=relu' ||
    fail 'the changed part of the fused conv (act=relu) is not in reverse video'
keys Left Left
keys 3
expect "no low-level IR at this step: it appears at step 4 (irgen)"
keys 2
expect "digraph glowc {"
keys 7
expect "step 2: fuse-activation (graph)"
expect "changed: yes"
keys 5
expect "no LLVM IR at this step"

# ---- search -------------------------------------------------------------------
keys 1
keys / C o n v _ 0 Enter
expect "/Conv_0: line 5, match 1 of 1"
keys n
expect "match 1 of 1"
keys Escape
refute "/Conv_0"

# ---- a marked step to diff against; unchanged steps hidden -----------------------
keys k k m                               # the cursor on the import, marked
expect "step 0 marked"
keys 6                                   # the current step against the mark
expect "--- step 0 import (graph)"
expect "+++ step 2 fuse-activation (graph)"
keys m                                   # unmarked: against the step before again
expect "--- step 1 cse (graph)"
keys u
expect "steps that changed nothing hidden"
refute "3 dce"
keys u
expect "3 dce"
keys j j 1

# ---- SVG of the graph: s asks where, offering a file under $TMPDIR -----------
keys s
expect "write SVG (.svg .png .dot) to: $WORK/glowc-model-step2.svg"
keys Enter
expect "wrote $WORK/glowc-model-step2.svg"
# input, three constants, conv, add, mul, output
check_svg "$WORK/glowc-model-step2.svg" 8

# ---- the low-level steps, the memory map and its SVG ------------------------------
keys n n n
expect "step 6/8: allocate"
keys 4
expect "memory plan after step 6 (allocate): 1 buffer in an arena of 128 bytes"
expect "address up, instruction index across (0..5)"
expect "arena 128 bytes, lower bound 128 bytes"
keys 6                                   # what allocate did: the memory map appeared
expect "+++ step 6 allocate (mem)"
keys 4
keys s
expect "write the memory map (SVG) to: $WORK/glowc-model-step6-mem.svg"
keys Enter
expect "wrote $WORK/glowc-model-step6-mem.svg"
"$PYTHON" -c "import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])" \
    "$WORK/glowc-model-step6-mem.svg" || fail "the memory map SVG is not well-formed"
keys 3
expect "program {"
keys s                                   # at a low-level step: the program's picture
keys C-u                                 # a path of one's own
keys "$WORK/mine.svg" Enter
expect "wrote $WORK/mine.svg"
check_svg "$WORK/mine.svg" 12
keys s Escape                            # Esc writes nothing
expect "nothing written"
keys s C-u "$WORK/no-such-folder/x.svg" Enter    # a folder that is not there: said so
expect "error: cannot write '$WORK/no-such-folder/x.svg': No such file or directory"
[ -e "$WORK/no-such-folder" ] && fail "a bad SVG path left something behind"
keys s Enter
expect "wrote $WORK/glowc-model-step6.svg"
check_svg "$WORK/glowc-model-step6.svg" 12

# ---- code generation: the LLVM IR before and after LLVM's optimisation ---------
keys n
expect "step 7/8: codegen"
keys 5
expect "; the model's functions (glowc_main and its workers)"   # the model first
expect "define i32 @glowc_main("
keys / M o d u l e I D Enter             # the kernels' library follows
expect "; ModuleID = 'libjit.bc'"
keys Escape
keys n
expect "step 8/8: llvm-opt"
keys / @ g l o w c _ m a i n '(' Enter
expect "@glowc_main(ptr"
keys Escape
keys p p
expect "step 6/8: allocate"

# ---- run and compare ------------------------------------------------------------
keys r
expect "run at step 6 (allocate) on the LIR interpreter"
expect "max abs diff from step 0: 0 (within tolerance)"
keys c
expect "Conv_0"
expect "(as Relu_1)"
expect "output 'y'"
expect "4 values compared, 0 beyond tolerance"
keys 1                                   # a view key leaves the output
expect "func @main"

# ---- an operator's history: the fused relu down to the kernel computing it -----
keys o R e l u _ 1 Enter
expect "history of 'Relu_1':"
expect "gone: its users now read %1 (conv \"Conv_0\"), followed from here"
expect "LLVM functions (code generation) of 'Conv_0':"
keys / C o n v _ 0 Enter                 # o with no name takes the search pattern
keys o Enter
expect "history of 'Conv_0':"
keys Escape
keys o N o p e Enter
expect "no node or instruction named 'Nope' at any step"
keys 1

# ---- help, an unknown key -----------------------------------------------------
keys '?'
expect "next/previous step that changed"
keys Z
expect "unknown key; ? shows the keys"

# ---- 80x24 and resizing ------------------------------------------------------------
"${TMUX_CMD[@]}" resize-window -t ui -x 80 -y 24
sleep 0.5
expect "1 graph 2 dot 3 lir 4 mem 5 llvm 6 diff 7 stats"
expect "model.hl | step 6/8: allocate"
[ "$(screen | wc -l)" -le 24 ] || fail "more than 24 rows at 80x24"
screen | "$PYTHON" -c 'import sys; sys.exit(any(len(l.rstrip("\n")) > 80 for l in sys.stdin))' ||
    fail "a row wider than 80 columns"
"${TMUX_CMD[@]}" resize-window -t ui -x 120 -y 40
sleep 0.5
expect "model.hl | step 6/8: allocate"

# ---- growing the window leaves no blank rows while text is hidden above ---------
keys 3
"${TMUX_CMD[@]}" resize-window -t ui -x 100 -y 8
sleep 0.5
keys j j                                 # the list scrolls to keep the cursor in view
keys G                                   # the end of the program
expect "deallocactivation"
refute "0 import"
"${TMUX_CMD[@]}" resize-window -t ui -x 120 -y 40
sleep 0.5
expect "0 import"                        # every step fits again: all shown
expect "declare {"                       # and the whole program

# ---- the line cursor: Enter follows a %ref to its definition -------------------
keys 1
keys : s t e p Space 0 Enter             # (a REPL command; see below)
expect "step 0/8: import"
keys g J J J J J J J                     # line 8: %4 = add(%2, %3)
keys Enter                               # on the current step: its first operand
expect "%2 is defined on line 6 (Backspace: back)"
keys BSpace
expect "back to line 8"
keys w Enter                             # w marks the next %ref: %3
expect "%3 is defined on line 7"
keys K K Enter                           # line 5: conv(%x, ...): %x is a parameter
expect "%x is defined on line 1"
keys Enter                               # the header defines %x itself
expect "this line defines %x"
keys : s t e p Space a l l o c Tab Enter  # Tab completes a step's name
expect "step 6/8: allocate"
keys 3
expect_re "%[0-9]+ = allocactivation f32<1x2x4x4> @0 loc"
keys / c o n v Space @ o u t Enter Escape
keys Enter                               # conv's first operand: its @out buffer
expect_re "%[0-9]+ is defined on line [0-9]+ \(Backspace: back\)"
keys j                                   # the step cursor away from the current:
keys Enter                               # Enter selects that step again
expect "step 7/8: codegen"
keys k Enter

# ---- Tab completes node names: o, /, and :node ---------------------------------
keys o R e Tab
expect "2 node names: Relu_1 Relu_2"
keys 2 Enter                              # Tab went as far as both agree: Relu_
expect "history of 'Relu_2':"
keys o C o Tab Enter                     # the only one: completed whole
expect "history of 'Conv_0':"
keys / M u Tab
expect "/Mul_4"
keys Enter Escape
keys o Z z Tab
expect "no node name starts with 'Zz'"
keys Escape

# ---- the : command line takes the REPL's commands -------------------------------
keys : s h o w Space s t a t s Enter     # output in the pane
expect ":show stats"
expect "step 6: allocate (lir)"
keys : n o d Tab A d Tab Enter           # command and node names complete
expect "history of 'Add_3':"
keys : Up Up Enter                       # Up recalls the commands before
expect "step 6: allocate (lir)"
refute "history of 'Add_3':"
keys : s v g Space "$WORK/cmd.svg" Enter
expect "wrote $WORK/cmd.svg (low-level program of step 6: allocate)"
check_svg "$WORK/cmd.svg" 12
keys : n o p e Enter
expect "unknown command 'nope'"
keys : p i p e l i n e Space c s e Enter  # a new pipeline: the steps are new
expect "model.hl | step 0/"
expect "1 cse"
refute "fuse-activation"
keys : l o a d Space b r o k e n . o n n x Enter
expect "not a valid ONNX model"
keys : l o a d Space m o d e l . h l Enter
expect "step 0/"
keys : q u i t Enter                     # quit leaves, as in the REPL
expect "EXIT=0"
expect "TTY=icanon echo"

# ---- the same at 80x24 ------------------------------------------------------------
start 80 24 "$GLOWC" explore model.hl --passes=$PASSES
expect "step 0/8: import"
keys : s t e p Space f u Tab Enter
expect "step 2/8: fuse-activation"
expect_re '│  %1 = conv\(%x, %w, %b\).*>$'
keys l l l l l l l l l l l l l l l l l l l l
expect 'act=relu'
expect_re '│<'
keys 0 o R e Tab
expect "2 node names: Relu_1 Relu_2"
keys Escape s
expect_re "write SVG .*step2.svg"
keys Escape
screen | "$PYTHON" -c 'import sys; sys.exit(any(len(l.rstrip("\n")) > 80 for l in sys.stdin))' ||
    fail "a row wider than 80 columns"
keys q
expect "EXIT=0"

# ---- q restores the terminal --------------------------------------------------
start 100 30 "$GLOWC" explore model.hl --passes=$PASSES
expect "step 0/8: import"
keys q
expect "EXIT=0"
expect "TTY=icanon echo"

# ---- SIGINT and SIGTERM restore it too ---------------------------------------------
start 100 30 "$GLOWC" explore model.hl --passes=$PASSES
expect "step 0/8: import"
keys C-c
expect "EXIT=130"
expect "TTY=icanon echo"

start 100 30 "$GLOWC" explore model.hl --passes=$PASSES
expect "step 0/8: import"
pid=$("${TMUX_CMD[@]}" list-panes -t ui -F '#{pane_pid}')
kill -TERM "$(pgrep -P "$pid" -x glowc)"
expect "EXIT=143"
expect "TTY=icanon echo"

# ---- SIGINT while the model loads (a FIFO no one writes: loading waits) ---------
mkfifo "$WORK/slow.hl"
start 100 30 "$GLOWC" explore slow.hl
expect "loading slow.hl: the import and every step"
keys C-c
expect "EXIT=130"
expect "TTY=icanon echo"

# ---- a compare at 80 columns: the verdicts fit, the status says the first -------
start 80 24 "$GLOWC" explore model.hl --passes=$PASSES --break-pass=fuse-activation
expect "step 0/8: import"
keys j j Enter c
expect ">>>    1  "
expect "BEYOND  Add_3"
expect "first beyond tolerance: 'Add_3' (3 of 4 values)"
keys q
expect "EXIT=0"

# ---- a pass that breaks the IR: its step is marked, the steps after it never run,
# ---- and running, comparing or viewing it is an error, not a crash ----------------
start 120 40 "$GLOWC" explore model.hl --passes=cse,test-break-types,dce,irgen,allocate
expect "2 test-break-types     FAIL"
expect "error: pass 'test-break-types' (step 2) produced invalid IR"
refute "3 dce"
keys j j Enter
expect "step 2/2: test-break-types (failed)"
keys r
expect "(failed) | run | error: step 2 (test-break-types) failed: its IR cannot run"
keys c
expect "(failed) | compare | error: step 2 (test-break-types) failed: its IR cannot run"
keys 6                                   # the lines the broken pass changed
expect "+++ step 2 test-break-types (graph)"
keys 2                                   # the broken graph is drawn, its bad type shown
expect 'conv\nConv_0\nf32<1x2x4x4x7>'
keys 2 3 4 5 7 1                         # every view of the broken step
expect "func @main"
keys p
expect "step 1/2: cse"
keys r                                   # the steps before it still run
expect "max abs diff from step 0: 0 (within tolerance)"
keys q
expect "EXIT=0"
expect "TTY=icanon echo"

# ---- a terminal that cannot move the cursor gets a message, not a mess ----------
start 100 30 env TERM=dumb "$GLOWC" explore model.hl
expect "error: explore: the terminal 'dumb' (TERM) cannot move the cursor"
expect "EXIT=1"
expect "TTY=icanon echo"

# ---- a model that does not load opens the explorer on the error -----------------
start 100 30 "$GLOWC" explore broken.onnx
expect "broken.onnx: error:"
expect "The model could not be loaded; q quits."
keys 6                                   # any view shows why
expect "The model could not be loaded; q quits."
expect "broken.onnx | no model | diff"
keys q
expect "EXIT=0"

# At 80 columns the error under a long path is folded into view.
LONG="$WORK/a-folder-with-a-rather-long-name/and-another-one-below-it"
mkdir -p "$LONG"
cp "$WORK/broken.onnx" "$LONG/"
start 80 24 "$GLOWC" explore "$LONG/broken.onnx"
expect "    corrupted protobuf)"         # the end of the message, folded into the main pane
expect "no steps"
expect "| error: not a valid ONNX model"     # the status line, without the path
keys q
expect "EXIT=0"

# ---- the training function: a differentiate step, then its passes (issue 19) ----
cp "$(dirname "$0")/../../fixtures/models/digits.onnx" "$WORK/digits.onnx"
start 160 45 "$GLOWC" explore --train --optimizer=adam digits.onnx
expect "digits.onnx | step 0/"
expect_re "1 differentiate +\+[0-9]+-[0-9]+"   # the gradient nodes come in one step
keys Down Enter
expect "step 1/"
keys / n l l _ l o s s Enter             # the loss is part of the graph
expect_re "%[0-9]+ = nll_loss\("
keys 6 / c o n v _ w e i g h t _ g r a d Enter    # what differentiate added
expect_re "\+ +%[0-9]+ = conv_weight_grad"
keys 3                                   # the training function lowered and allocated
expect "lir"
keys q
expect "EXIT=0"

if [ "$FAILED" = 0 ]; then
    echo "explore_test: all passed"
fi
exit "$FAILED"
