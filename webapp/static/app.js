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
