// Light JavaScript: confirmations, "select all", and live progress of long work.
document.addEventListener("submit", (event) => {
  const message = event.target.dataset.confirm;
  if (message && !window.confirm(message)) event.preventDefault();
});

document.addEventListener("change", (event) => {
  if (!event.target.matches("[data-select-all]")) return;
  const table = event.target.closest("table");
  table.querySelectorAll("input[name=id]:not(:disabled)").forEach((box) => {
    box.checked = event.target.checked;
  });
});

function followTask(section) {
  const bar = document.getElementById("task-progress");
  const count = document.getElementById("task-count");
  const status = document.getElementById("task-status");
  const message = document.getElementById("task-message");
  const poll = async () => {
    const response = await fetch(section.dataset.task, { headers: { Accept: "application/json" } });
    if (!response.ok) return;
    const task = await response.json();
    // The server words the count, status and message in the reader's language (`shown`).
    if (task.total) {
      bar.max = task.total;
      bar.value = task.done;
      count.textContent = task.shown.count;
    }
    status.textContent = task.shown.status;
    if (task.status === "queued" || task.status === "running") {
      setTimeout(poll, 500);
      return;
    }
    bar.max = 1;
    bar.value = 1;
    message.textContent = task.shown.message;
    const retry = document.getElementById("task-retry");
    if (retry && task.retriable) retry.hidden = false;
  };
  poll();
}

// A link to a folded section (<details id=...>, e.g. "#add-url") unfolds it.
function openTarget() {
  const target = window.location.hash && document.getElementById(window.location.hash.slice(1));
  if (target && target.tagName === "DETAILS") target.open = true;
}
window.addEventListener("hashchange", openTarget);

document.addEventListener("DOMContentLoaded", () => {
  openTarget();
  const section = document.querySelector("[data-task]");
  if (section && section.dataset.finished !== "yes") followTask(section);
});

// settings: the schedule picker shows the parts its mode uses and previews the next runs;
// the robots.txt editor previews what will be served; snippets copy to the clipboard.
function debounce(action, wait) {
  let timer;
  return (...args) => { clearTimeout(timer); timer = setTimeout(() => action(...args), wait); };
}

function schedulePicker(form) {
  const picker = form.querySelector("[data-schedule-picker]");
  if (!picker) return;
  const mode = picker.querySelector("[name=schedule_mode]");
  const runs = document.getElementById("schedule-runs");
  const problem = document.getElementById("schedule-preview-error");
  const showParts = () => {
    picker.querySelectorAll(".part").forEach((part) => {
      part.hidden = !part.dataset.modes.split(" ").includes(mode.value);
    });
  };
  const preview = debounce(async () => {
    const query = new URLSearchParams();
    picker.querySelectorAll("[name^=schedule_]").forEach((input) => query.set(input.name, input.value));
    const zone = form.querySelector("[name=timezone]");
    query.set("timezone", zone ? zone.value : "UTC");
    const response = await fetch(`${form.dataset.schedulePreview}?${query}`, { headers: { Accept: "application/json" } });
    if (!response.ok) return;
    const answer = await response.json();
    runs.replaceChildren(...answer.runs.map((run) => Object.assign(document.createElement("li"), { textContent: run })));
    problem.hidden = !answer.error;
    problem.textContent = answer.error || "";
  }, 300);
  showParts();
  picker.addEventListener("input", preview);
  picker.addEventListener("change", () => { showParts(); preview(); });
  const zone = form.querySelector("[name=timezone]");
  if (zone) zone.addEventListener("change", preview);
}

function robotsPreview(form) {
  const editor = form.querySelector("textarea[name=robots_txt]");
  const shown = document.getElementById("robots-preview");
  if (!editor || !shown) return;
  editor.addEventListener("input", debounce(async () => {
    const body = new FormData();
    body.set("csrf_token", form.querySelector("[name=csrf_token]").value);
    body.set("robots_txt", editor.value);
    const response = await fetch(form.dataset.robotsPreview, { method: "POST", body });
    if (!response.ok) return;
    const answer = await response.json();
    shown.textContent = answer.text === null ? answer.error : answer.text;
  }, 400));
}

document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("settings-form");
  if (form) { schedulePicker(form); robotsPreview(form); }
  document.querySelectorAll("button[data-copy]").forEach((button) => {
    if (!navigator.clipboard) return;
    button.hidden = false;
    button.addEventListener("click", async () => {
      await navigator.clipboard.writeText(document.getElementById(button.dataset.copy).textContent);
      button.textContent = button.dataset.copied || "✓";
    });
  });
});
