/* Part 9: first render. */
renderRows();
drawTimeline();
drawPlots();
document.body.dataset.ready = "1";
